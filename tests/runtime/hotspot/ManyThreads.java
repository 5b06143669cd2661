// Many Java threads at once, each doing HotMethods' 2:1 work: every thread's stacks must reach
// its run() and the thread start, and the shares hold over all of them.
//
//   java -cp CLASSES ManyThreads SECONDS THREADS
public class ManyThreads {
	public static void main(String[] args) throws InterruptedException {
		double seconds = args.length > 0 ? Double.parseDouble(args[0]) : 5;
		int n = args.length > 1 ? Integer.parseInt(args[1]) : 8;
		long end = System.nanoTime() + (long) (seconds * 1e9);
		Thread[] ts = new Thread[n];
		for (int i = 0; i < n; i++) {
			final long seed = i + 1;
			ts[i] = new Thread(() -> {
				long sum = seed;
				while (System.nanoTime() < end)
					sum = HotMethods.round(sum);
				if (sum == 42)
					System.out.println(sum);
			}, "worker-" + i);
			ts[i].start();
		}
		for (Thread t : ts)
			t.join();
	}
}
