//! Burns CPU about 2:1 (each burn of random length) under two custom-labels label sets (each naming a trace and a span),
//! for the seconds given as the first argument (default: until killed). At the end it prints
//! the thread CPU time it spent under each label set ("render_ns=N index_ns=N"): the truth a
//! profile's label shares are compared with (the same loop run twice as long is not exactly
//! twice the CPU time).

use std::hint::black_box;
use std::time::{Duration, Instant};

fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: a valid timespec and clock id
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// A pseudo-random length for each burn: a fixed cycle would beat against the profiler's
/// fixed sampling period and bias the shares (aliasing), whatever the truth.
fn jitter() -> u64 {
    use std::cell::Cell;
    thread_local!(static SEED: Cell<u64> = const { Cell::new(0x9e3779b97f4a7c15) });
    SEED.with(|s| {
        let x = s.get().wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        s.set(x);
        1_500_000 + (x >> 33) % 1_000_000
    })
}

#[inline(never)]
fn burn(units: u64) {
    let mut x: u64 = black_box(1);
    for _ in 0..black_box(units) * jitter() {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    }
    black_box(x);
}

#[inline(never)]
fn render() {
    burn(2)
}

#[inline(never)]
fn index() {
    burn(1)
}

fn main() {
    let secs: u64 = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    let deadline = Instant::now() + Duration::from_secs(if secs == 0 { 1 << 40 } else { secs });
    let (mut render_ns, mut index_ns) = (0u64, 0u64);
    while Instant::now() < deadline {
        custom_labels::with_label("trace_id", "5b8efff798038103d269b633813fc60c", || {
            custom_labels::with_label("span_id", "eee19b7ec3c1b174", || {
                custom_labels::with_label("handler", "render", || {
                    let t0 = thread_cpu_ns();
                    render();
                    render_ns += thread_cpu_ns() - t0;
                })
            })
        });
        custom_labels::with_label("trace_id", "0123456789abcdef0123456789abcdef", || {
            custom_labels::with_label("span_id", "0123456789abcdef", || {
                custom_labels::with_label("handler", "index", || {
                    let t0 = thread_cpu_ns();
                    index();
                    index_ns += thread_cpu_ns() - t0;
                })
            })
        });
    }
    println!("render_ns={} index_ns={}", render_ns, index_ns);
}
