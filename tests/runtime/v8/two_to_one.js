// Two hot functions doing 2:1 work (heavyWork twice lightWork's iterations per round), both
// optimized by Turbofan after warm-up. Runs for argv[2] seconds (default 5).
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
while (Date.now() < end) {
	for (let r = 0; r < 20; r++) {
		sink ^= heavyWork(200000);
		sink ^= lightWork(100000);
	}
}
if (sink === 42) console.log('unlikely');
