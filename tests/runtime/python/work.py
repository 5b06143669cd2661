# Workloads of the Python profiling tests (tests/integration/python_test.go); runs on 2.7
# and 3.x. Usage: work.py MODE SECONDS. Lines marked "# HOT:name" are what the tests expect
# as the exact line of a frame (the test finds them by the marker).
import os
import sys
import threading
import time


def leaf(n):
    x = 0
    while n:  # HOT:loop
        x += n * n  # HOT:loop
        n -= 1  # HOT:loop
    return x


# Each call runs for many sampling periods (leaf(N) takes milliseconds), so that sampling at a
# fixed rate cannot alias with the alternation of work_a and work_b.
N = 100000


def work_a():
    # twice work_b's work: the same calls (leaf's cost per iteration grows with n)
    leaf(N)  # HOT:call_a
    return leaf(N)  # HOT:call_a


def work_b():
    return leaf(N)  # HOT:call_b


def ab(end):
    while time.time() < end:
        work_a()
        work_b()


def handler(data):
    import zlib
    return zlib.compress(data, 9)  # HOT:zlib


def compress_loop(end):
    data = os.urandom(1 << 16) * 4
    while time.time() < end:
        handler(data)


def hash_worker(end, data):
    import hashlib
    while time.time() < end:
        hashlib.sha256(data).digest()  # HOT:hash


def threads(end):
    # the hashing thread spends its time in OpenSSL without the GIL; the main thread in Python
    t = threading.Thread(target=hash_worker, args=(end, b"x" * (1 << 22)))
    t.start()
    ab(end)
    t.join()


def child_work():
    return leaf(1500)  # HOT:child


def fork(end):
    pid = os.fork()
    if pid == 0:
        while time.time() < end:
            child_work()
        os._exit(0)
    sys.stdout.write("child %d\n" % pid)
    sys.stdout.flush()
    ab(end)
    os.waitpid(pid, 0)


def deep(n):
    if n:
        return deep(n - 1)
    return leaf(20000)


def deep_loop(end):
    # 50 Python frames under <module> (the benchmark's deep stack)
    while time.time() < end:
        deep(48)


def churn(n):
    if n:
        return churn(n - 1)
    return n


def churn_loop(end):
    # frames pushed and popped all the time: samples taken while the chain and the native
    # stack disagree (a call half made) end the Python frames in a marker
    while time.time() < end:
        churn(30)


def sleeper():
    time.sleep(0.01)  # HOT:sleep


def sleep_loop(end):
    while time.time() < end:
        sleeper()


def main():
    mode, secs = sys.argv[1], float(sys.argv[2])
    sys.stdout.write("ready %d\n" % os.getpid())
    sys.stdout.flush()
    end = time.time() + secs
    {"ab": ab, "zlib": compress_loop, "threads": threads, "fork": fork, "deep": deep_loop,
     "sleep": sleep_loop, "churn": churn_loop}[mode](end)


main()
