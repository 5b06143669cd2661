// two_to_one.js, run so that its compiled code reaches V8's jitdump while it runs: V8 writes
// the jitdump through a 2 MiB buffer, so the few records of a small script's functions stay in
// that buffer until exit. A worker compiles some 6000 small functions after 2.5 s (each gets
// its own code with --interpreted-frames-native-stack), filling the buffer: it is written out,
// heavyWork's and lightWork's records with it.
'use strict';
const { Worker } = require('worker_threads');

new Worker(
	`setTimeout(() => {
		let s = 0;
		for (let i = 0; i < 6000; i++) s += new Function('x', 'return x + ' + i)(i);
		if (s === 42) console.log('unlikely');
	}, 2500);`,
	{ eval: true },
);
require('./two_to_one.js');
