# Two hot functions doing 2:1 work, for Python 3.12+ run with -X perf (a perf map names the
# trampolines each Python function gets). Runs for argv[1] seconds (default 5).
import sys
import time


def heavy_work(n):
    x = 1
    for i in range(n):
        x = (x * 1103515245 + i) % 2147483647
    return x


def light_work(n):
    x = 3
    for i in range(n):
        x = (x * 1103515245 + i) % 2147483647
    return x


def main():
    end = time.monotonic() + float(sys.argv[1] if len(sys.argv) > 1 else 5)
    sink = 0
    while time.monotonic() < end:
        sink ^= heavy_work(20000)
        sink ^= light_work(10000)
    return sink


if __name__ == "__main__":
    main()
