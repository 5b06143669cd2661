// Two hot functions doing 2:1 work (heavyWork twice lightWork's iterations per round), both
// optimized by Turbofan after warm-up. Runs for argv[2] seconds (default 5); prints timings.
'use strict';

function mix(x, i) {
	return (x * 1103515245 + i) % 2147483647;
}

function heavyWork(n) {
	let x = 1;
	for (let i = 0; i < n; i++) x = mix(x, i) ^ (i >>> 3);
	return x;
}

function lightWork(n) {
	let x = 3;
	for (let i = 0; i < n; i++) x = mix(x, i) ^ (i >>> 3);
	return x;
}

const seconds = Number(process.argv[2] || 5);
const end = Date.now() + seconds * 1000;
let sink = 0;
// The time spent in each function so far (ns), printed every 250 ms as "work HEAVY LIGHT":
// the work actually done (2:1 by iterations, not exactly by time), what tests hold shares to.
let heavyNs = 0n, lightNs = 0n, shown = 0;
while (Date.now() < end) {
	for (let r = 0; r < 20; r++) {
		const a = process.hrtime.bigint();
		sink ^= heavyWork(200000);
		const b = process.hrtime.bigint();
		sink ^= lightWork(100000);
		heavyNs += b - a;
		lightNs += process.hrtime.bigint() - b;
	}
	if (Date.now() - shown >= 250) {
		shown = Date.now();
		console.log(`work ${heavyNs} ${lightNs}`);
	}
}
if (sink === 42) console.log('unlikely');
