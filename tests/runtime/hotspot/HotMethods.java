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
//   java HotMethods SECONDS [DEPTH]
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

	static long round(long sum) {
		sum += heavy(sum, 2 * ROUND);
		sum += light(sum, ROUND);
		return sum;
	}

	static long down(long sum, int depth) {
		if (depth == 0)
			return round(sum);
		return down(sum + depth, depth - 1) + 1;
	}

	public static void main(String[] args) {
		double seconds = args.length > 0 ? Double.parseDouble(args[0]) : 5;
		int depth = args.length > 1 ? Integer.parseInt(args[1]) : 0;
		long end = System.nanoTime() + (long) (seconds * 1e9);
		long sum = 0;
		int rounds = 0;
		while (System.nanoTime() < end) {
			sum = down(sum, depth);
			rounds++;
		}
		System.out.println("rounds " + rounds + " sum " + sum);
	}
}
