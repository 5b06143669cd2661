// Two hot methods doing 2:1 work, called from an interpreted main.
//
// heavy() and light() run the same loop body, heavy() twice as many iterations per round, so a
// profiler should give them 2/3 and 1/3 of the samples of this thread. main's loop runs a few
// hundred rounds only: it stays below the JIT's thresholds, so main stays interpreted and
// heavy()/light() (compiled after a few rounds) are never inlined into it.
//
// With DEPTH, each round runs DEPTH calls of down() deep: a stack of more Java frames than the
// unwinder takes in one BPF program run.
//
// With WARMUP, the rounds of the first WARMUP seconds run under warm(): a profiler started
// before the JVM sees the JIT's warm-up there (heavy() and light() interpreted, then compiled
// at times that depend on how busy the machine is) and can leave it out of the shares. The
// time the two took after the warm-up is printed at the end (heavy_ns, light_ns): on a busy
// machine one may still run in a slower tier than the other, and 2:1 in work is not 2:1 in
// time.
//
//   java HotMethods SECONDS [DEPTH [WARMUP]]
public class HotMethods {
	static final int ROUND = 2_000_000;

	static long heavy(long seed, int n) {
		long x = seed | 1, acc = 0;
		for (int i = 0; i < n; i++) {
			x ^= x << 13;
			x ^= x >>> 7;
			x ^= x << 17;
			acc += x;
		}
		return acc;
	}

	static long light(long seed, int n) {
		long x = seed | 1, acc = 0;
		for (int i = 0; i < n; i++) {
			x ^= x << 13;
			x ^= x >>> 7;
			x ^= x << 17;
			acc += x;
		}
		return acc;
	}

	// time spent in heavy() and light() after the warm-up, as the JIT made them
	static long heavyNs, lightNs;
	static boolean timing;

	static long round(long sum) {
		// a round's length varies (0.5 to 1.5 ROUND, 2:1 within it): rounds of one fixed
		// length, about 10 ms, sampled every 5 ms (199 Hz) alias, and the profiler's own work
		// after each sample can lock the phase on a 2-CPU host
		int k = ROUND / 2 + (int) ((sum >>> 33) % ROUND);
		long t0 = System.nanoTime();
		sum += heavy(sum, 2 * k);
		long t1 = System.nanoTime();
		sum += light(sum, k);
		if (timing) {
			heavyNs += t1 - t0;
			lightNs += System.nanoTime() - t1;
		}
		return sum;
	}

	static long down(long sum, int depth) {
		if (depth == 0)
			return round(sum);
		return down(sum + depth, depth - 1) + 1;
	}

	static long warm(long sum, int depth) {
		return down(sum, depth);
	}

	public static void main(String[] args) {
		double seconds = args.length > 0 ? Double.parseDouble(args[0]) : 5;
		int depth = args.length > 1 ? Integer.parseInt(args[1]) : 0;
		double warmup = args.length > 2 ? Double.parseDouble(args[2]) : 0;
		long warmEnd = System.nanoTime() + (long) (warmup * 1e9);
		long warmSum = 0;
		while (System.nanoTime() < warmEnd)
			warmSum = warm(warmSum, depth);
		timing = true;
		long end = System.nanoTime() + (long) (seconds * 1e9);
		long sum = 0;
		int rounds = 0;
		while (System.nanoTime() < end) {
			sum = down(sum, depth);
			rounds++;
		}
		System.out.println("rounds " + rounds + " sum " + sum + " heavy_ns " + heavyNs + " light_ns " + lightNs);
	}
}
