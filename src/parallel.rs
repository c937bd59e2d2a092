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
pub(crate) const THREADS_ENV: &str = "GATE_THREADS";
/// Most threads `GATE_THREADS` may ask for.
pub(crate) const MAX_THREADS: usize = 1024;

thread_local! {
    static IN_WORKER: Cell<bool> = const { Cell::new(false) };
}

/// `GATE_THREADS` parsed: None when unset, an error line when it is not a
/// number from 1 to `MAX_THREADS`.
pub(crate) fn threads_from_env() -> Result<Option<usize>, String> {
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
pub(crate) fn map_within<'a, T: Sync, R: Send>(
    bytes_per_item: usize,
    items: &'a [T],
    f: impl Fn(&'a T) -> R + Sync,
) -> Vec<R> {
    let grants = extra_workers(bytes_per_item, items.len());
    let out = map_with(1 + grants.len(), items, f);
    drop(grants);
    out
}

/// Room in the shared budget for the workers past the first of a task of
/// `items` items, `bytes_per_item` each: as many as fit now (none inside a
/// worker). The workers are one more than the grants; they hold their room
/// until the grants drop.
pub(crate) fn extra_workers(bytes_per_item: usize, items: usize) -> Vec<crate::budget::Grant> {
    let mut grants = Vec::new();
    if !IN_WORKER.with(Cell::get) {
        let want = threads().min(items).saturating_sub(1);
        while grants.len() < want {
            match crate::budget::try_reserve(bytes_per_item.max(1)) {
                Some(g) => grants.push(g),
                None => break,
            }
        }
    }
    grants
}

/// Workers `map_within` would start now for items of `bytes_per_item`.
#[cfg(test)]
fn threads_within(bytes_per_item: usize) -> usize {
    let room = crate::budget::BUDGET_BYTES.saturating_sub(crate::budget::held());
    threads().min(1 + room / bytes_per_item.max(1))
}

/// `map` on at most `threads` threads.
pub(crate) fn map_with<'a, T: Sync, R: Send>(
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

/// Whether this thread is a worker of `map` or `ordered`: work started
/// here runs on this thread (the threads do not multiply).
pub(crate) fn in_worker() -> bool {
    IN_WORKER.with(Cell::get)
}

/// `make(i)` for every `i` in `0..n` on up to `threads` worker threads,
/// each result handed to `take` on this thread in the order of `i`, with
/// at most `ahead` results made and not yet taken (memory stays bounded
/// whatever `n`). An error from `take` stops the work and is returned.
/// For one trace parsed in chunks (`trace::chunks`).
pub(crate) fn ordered<R: Send, E>(
    threads: usize,
    n: usize,
    ahead: usize,
    make: impl Fn(usize) -> R + Sync,
    mut take: impl FnMut(R) -> Result<(), E>,
) -> Result<(), E> {
    let workers = threads.min(n);
    if workers <= 1 || in_worker() {
        return (0..n).try_for_each(|i| take(make(i)));
    }
    let ahead = ahead.max(1);
    let state = std::sync::Mutex::new(Ordered {
        next_make: 0,
        next_take: 0,
        made: std::collections::BTreeMap::new(),
        stop: false,
        failed: false,
    });
    let (ready, room) = (std::sync::Condvar::new(), std::sync::Condvar::new());
    let lock = || state.lock().unwrap_or_else(|p| p.into_inner());
    // One worker: the next index, when the results wait for room no more.
    let work = || {
        let _guard = Stopper(&state, &ready, &room);
        loop {
            let i = {
                let mut st = lock();
                while !st.stop && st.next_make < n && st.next_make >= st.next_take + ahead {
                    st = room.wait(st).unwrap_or_else(|p| p.into_inner());
                }
                if st.stop || st.next_make >= n {
                    break;
                }
                st.next_make += 1;
                st.next_make - 1
            };
            let r = make(i);
            lock().made.insert(i, r);
            ready.notify_all();
        }
    };
    std::thread::scope(|s| {
        let mut started = 0;
        for k in 0..workers {
            let spawned = std::thread::Builder::new().spawn_scoped(s, || {
                IN_WORKER.with(|w| w.set(true));
                work()
            });
            match spawned {
                Ok(_) => started += 1,
                Err(e) => {
                    warn_fewer_threads(k, workers, &e);
                    break;
                }
            }
        }
        let result = take_in_order(n, started, &state, &ready, &room, &make, &mut take);
        lock().stop = true;
        room.notify_all();
        result
    })
}

/// What the workers of `ordered` share.
struct Ordered<R> {
    next_make: usize,
    next_take: usize,
    made: std::collections::BTreeMap<usize, R>,
    stop: bool,
    /// A worker panicked: nothing more will come (the scope re-raises it).
    failed: bool,
}

/// Ends a worker of `ordered`: when it panicked, everyone stops.
struct Stopper<'a, R>(
    &'a std::sync::Mutex<Ordered<R>>,
    &'a std::sync::Condvar,
    &'a std::sync::Condvar,
);

impl<R> Drop for Stopper<'_, R> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let mut st = self.0.lock().unwrap_or_else(|p| p.into_inner());
            st.stop = true;
            st.failed = true;
            drop(st);
            self.1.notify_all();
            self.2.notify_all();
        }
    }
}

/// The taking side of `ordered`: each result in order (made here when no
/// worker could be started).
fn take_in_order<R, E>(
    n: usize,
    started: usize,
    state: &std::sync::Mutex<Ordered<R>>,
    ready: &std::sync::Condvar,
    room: &std::sync::Condvar,
    make: &(impl Fn(usize) -> R + Sync),
    take: &mut impl FnMut(R) -> Result<(), E>,
) -> Result<(), E> {
    if started == 0 {
        return (0..n).try_for_each(|i| take(make(i)));
    }
    for i in 0..n {
        let r = {
            let mut st = state.lock().unwrap_or_else(|p| p.into_inner());
            loop {
                if let Some(r) = st.made.remove(&i) {
                    st.next_take = i + 1;
                    break Some(r);
                }
                if st.failed {
                    break None;
                }
                st = ready.wait(st).unwrap_or_else(|p| p.into_inner());
            }
        };
        room.notify_all();
        match r {
            Some(r) => take(r)?,
            // A worker panicked: the scope's join raises it.
            None => return Ok(()),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `ordered` hands the results over in order, never more than `ahead`
    /// made and not taken, and stops at the first error of `take`.
    #[test]
    fn ordered_results_come_in_order_within_the_lookahead() {
        let made = AtomicUsize::new(0);
        let taken = AtomicUsize::new(0);
        let mut seen = Vec::new();
        let r: Result<(), ()> = ordered(
            4,
            500,
            3,
            |i| {
                let m = made.fetch_add(1, Ordering::SeqCst) + 1;
                assert!(m <= taken.load(Ordering::SeqCst) + 3 + 4, "{m} made");
                std::thread::yield_now();
                i * 2
            },
            |v| {
                taken.fetch_add(1, Ordering::SeqCst);
                seen.push(v);
                Ok(())
            },
        );
        assert!(r.is_ok());
        assert_eq!(seen, (0..500).map(|i| i * 2).collect::<Vec<_>>());
        let mut n = 0;
        let r = ordered(
            3,
            1000,
            2,
            |i| i,
            |i| {
                n += 1;
                if i == 17 {
                    Err(i)
                } else {
                    Ok(())
                }
            },
        );
        assert_eq!((r, n), (Err(17), 18));
    }

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
