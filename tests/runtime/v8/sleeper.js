// A JavaScript function that waits off the CPU (Atomics.wait, 20 ms at a time) for argv[2]
// seconds (default 5): its off-CPU stacks hold sleeper() above V8's Atomics.wait builtin.
'use strict';

const cell = new Int32Array(new SharedArrayBuffer(4));

function sleeper() {
	Atomics.wait(cell, 0, 0, 20);
}

const end = Date.now() + Number(process.argv[2] || 5) * 1000;
while (Date.now() < end) sleeper();
