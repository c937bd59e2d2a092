//! Every core: independent pieces of work (the columns of a trace, the
//! runs of a capture, the nodes of a multi-node run) spread over threads
//! with the standard library's scoped threads, results in input order, so
//! the output is the same bytes whatever the thread count (`GATE_THREADS=1`
//! is the single-threaded path the tests compare against).
//!
//! Work inside a worker runs on that worker: nested calls (a node's columns
//! inside the nodes' loop) do not multiply the threads.

use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

/// Environment variable that sets the number of threads (default: the
/// cores the process may use).
pub const THREADS_ENV: &str = "GATE_THREADS";
/// Most threads `GATE_THREADS` may ask for.
pub const MAX_THREADS: usize = 1024;

thread_local! {
    static IN_WORKER: Cell<bool> = const { Cell::new(false) };
}

/// `GATE_THREADS` parsed: None when unset, an error line when it is not a
/// number from 1 to `MAX_THREADS`.
pub fn threads_from_env() -> Result<Option<usize>, String> {
    let Some(raw) = std::env::var_os(THREADS_ENV) else {
        return Ok(None);
    };
    let text = raw.to_string_lossy();
    match text.trim().parse::<usize>() {
        Ok(n) if (1..=MAX_THREADS).contains(&n) => Ok(Some(n)),
        _ => Err(format!(
            "{THREADS_ENV}='{}' is not a thread count; set it to a number from 1 to {MAX_THREADS}, or unset it to use every core",
            crate::escape::terminal(&text)
        )),
    }
}

/// Threads to use: `GATE_THREADS`, else the cores available. (`main`
/// refuses a bad `GATE_THREADS` before any work starts; here it counts as
/// unset.)
pub fn threads() -> usize {
    static N: OnceLock<usize> = OnceLock::new();
    *N.get_or_init(|| {
        threads_from_env().ok().flatten().unwrap_or_else(|| {
            std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1)
        })
    })
}

/// `f` of every item, in the items' order, computed on up to `threads()`
/// threads (each takes the next item not yet taken).
pub fn map<'a, T: Sync, R: Send>(items: &'a [T], f: impl Fn(&'a T) -> R + Sync) -> Vec<R> {
    map_with(threads(), items, f)
}

/// `map`, each worker past the first holding `bytes_per_item` of working
/// memory in the shared budget (`budget`) while it works: as many workers
/// as find room now, at least one. The first works on the caller's room
/// (a load's grant, or the program's own), so no call ever waits.
pub fn map_within<'a, T: Sync, R: Send>(
    bytes_per_item: usize,
    items: &'a [T],
    f: impl Fn(&'a T) -> R + Sync,
) -> Vec<R> {
    let mut grants = Vec::new();
    if !IN_WORKER.with(Cell::get) {
        let want = threads().min(items.len()).saturating_sub(1);
        while grants.len() < want {
            match crate::budget::try_reserve(bytes_per_item.max(1)) {
                Some(g) => grants.push(g),
                None => break,
            }
        }
    }
    let out = map_with(1 + grants.len(), items, f);
    drop(grants);
    out
}

/// Workers `map_within` would start now for items of `bytes_per_item`.
#[cfg(test)]
fn threads_within(bytes_per_item: usize) -> usize {
    let room = crate::budget::BUDGET_BYTES.saturating_sub(crate::budget::held());
    threads().min(1 + room / bytes_per_item.max(1))
}

/// `map` on at most `threads` threads.
pub fn map_with<'a, T: Sync, R: Send>(
    threads: usize,
    items: &'a [T],
    f: impl Fn(&'a T) -> R + Sync,
) -> Vec<R> {
    let workers = threads.min(items.len());
    if workers <= 1 || IN_WORKER.with(Cell::get) {
        return items.iter().map(f).collect();
    }
    let next = AtomicUsize::new(0);
    // One worker's loop: take the next item not yet taken until none is left.
    let work = || {
        let mut out = Vec::new();
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(item) = items.get(i) else { break };
            out.push((i, f(item)));
        }
        out
    };
    let mut done: Vec<(usize, R)> = std::thread::scope(|s| {
        let mut handles = Vec::with_capacity(workers);
        for started in 0..workers {
            let spawned = std::thread::Builder::new().spawn_scoped(s, || {
                IN_WORKER.with(|w| w.set(true));
                work()
            });
            match spawned {
                Ok(h) => handles.push(h),
                // A pids limit (`ulimit -u`, a container's pids.max) or no
                // memory for a stack: fewer threads, down to this one.
                Err(e) => {
                    warn_fewer_threads(started, workers, &e);
                    break;
                }
            }
        }
        let mut done = Vec::new();
        if handles.len() < workers {
            IN_WORKER.with(|w| w.set(true));
            done = work();
            IN_WORKER.with(|w| w.set(false));
        }
        for h in handles {
            match h.join() {
                Ok(v) => done.extend(v),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        done
    });
    done.sort_unstable_by_key(|(i, _)| *i);
    done.into_iter().map(|(_, r)| r).collect()
}

/// One line, once per process: the work goes on with the threads started.
fn warn_fewer_threads(started: usize, wanted: usize, e: &std::io::Error) {
    static WARNED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if !WARNED.swap(true, Ordering::Relaxed) {
        crate::gate_eprintln!(
            "gate: warning: could start only {started} of {wanted} worker threads ({}); going on with fewer (set {THREADS_ENV} lower, or raise the process limit)",
            crate::escape::terminal(&e.to_string())
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_come_back_in_input_order_on_any_thread_count() {
        let items: Vec<u64> = (0..1000).collect();
        let one = map_with(1, &items, |x| x * x + 1);
        for threads in [2, 3, 8, 64] {
            assert_eq!(map_with(threads, &items, |x| x * x + 1), one);
        }
        assert!(map_with(4, &Vec::<u64>::new(), |x| *x).is_empty());
    }

    #[test]
    fn workers_past_the_first_hold_room_in_the_budget() {
        let big = crate::budget::BUDGET_BYTES;
        assert_eq!(threads_within(usize::MAX), 1);
        assert!(threads_within(big / 2) <= 3);
        // Items too large for any room still run, on the caller's thread.
        let items: Vec<u64> = (0..64).collect();
        assert_eq!(
            map_within(usize::MAX, &items, |x| x + 1),
            map_with(1, &items, |x| x + 1)
        );
        // The grants are returned when the work is done.
        let during = map_within(big / 8, &items, |_| crate::budget::held());
        assert!(during.iter().all(|&h| h <= big));
    }

    #[test]
    fn nested_calls_stay_on_their_worker() {
        let outer: Vec<usize> = (0..4).collect();
        let got = map_with(4, &outer, |&i| {
            assert!(IN_WORKER.with(Cell::get));
            map_with(4, &[i, i + 1], |&j| j * 10)
        });
        assert_eq!(got[3], vec![30, 40]);
    }
}
