//! The CPU priority of the search indexes' background work (`--arangosearch.nice`): the
//! indexer thread of each view and inverted index (which parses and analyzes committed
//! documents, `view_feed.rs`) and tantivy's indexing, document-store and merge threads run
//! at a higher nice value than request handling. On a busy machine a bulk load into a
//! linked collection is then acknowledged at nearly the pace it has without a view, and the
//! indexes catch up on the CPU the writes leave; the bounded feed queue (`view_feed.rs`)
//! slows writers down when the indexer falls too far behind.
//!
//! On Linux a thread's nice value is its own and inherited by the threads it spawns: the
//! indexer lowers its own priority when it starts, and an index is opened on a short-lived
//! thread that lowered its own first, so every thread tantivy's writer spawns there (its
//! indexing threads, which spawn the document-store compressors, the segment updater and
//! the merge pool) inherits it. A thread is never raised above the priority it has (a
//! server started with `nice -n 19` keeps 19). Elsewhere the threads keep the process's
//! priority.

use std::path::Path;
use std::sync::atomic::{AtomicI32, Ordering};

use quiver_errors::{Error, ErrorCode, Result};
use quiver_search::index::{Opened, ViewIndex};

/// The default nice value of the search indexes' background threads.
pub const DEFAULT_SEARCH_NICE: i32 = 10;

/// The largest nice value Linux knows.
const MAX_NICE: i32 = 19;

static SEARCH_NICE: AtomicI32 = AtomicI32::new(DEFAULT_SEARCH_NICE);

/// Sets the nice value of background search threads started from now on (0 keeps them at
/// the process's priority; clamped to 0..=19). Process-wide: a thread's priority is an
/// operating-system property, whichever core started it.
pub(crate) fn set_search_nice(nice: i32) {
    SEARCH_NICE.store(nice.clamp(0, MAX_NICE), Ordering::Relaxed);
}

/// The nice value background search threads get.
pub(crate) fn search_nice() -> i32 {
    SEARCH_NICE.load(Ordering::Relaxed)
}

/// Lowers the calling thread's priority to the background search nice value (never raises
/// it). Returns the thread's nice value afterwards (None where it is not known).
pub(crate) fn lower_current_thread() -> Option<i32> {
    lower_current_thread_to(search_nice())
}

#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
fn lower_current_thread_to(nice: i32) -> Option<i32> {
    // SAFETY: plain system calls on the calling thread's own id; errno is the calling
    // thread's, cleared first because -1 is also a valid priority.
    unsafe {
        let tid = libc::gettid() as libc::id_t;
        *libc::__errno_location() = 0;
        let current = libc::getpriority(libc::PRIO_PROCESS, tid);
        if current == -1 && *libc::__errno_location() != 0 {
            return None;
        }
        if nice <= current {
            return Some(current);
        }
        if libc::setpriority(libc::PRIO_PROCESS, tid, nice) != 0 {
            tracing::warn!(
                "lowering a search thread's priority to nice {nice} failed: {}",
                std::io::Error::last_os_error()
            );
            return Some(current);
        }
        Some(nice)
    }
}

#[cfg(not(target_os = "linux"))]
fn lower_current_thread_to(_nice: i32) -> Option<i32> {
    None
}

/// Opens a view's or inverted index's tantivy index ([`ViewIndex::open`]) on a thread whose
/// priority was lowered first, so that the threads its writer spawns run at the background
/// search priority.
pub(crate) fn open_index(dir: &Path) -> Result<(ViewIndex, Opened)> {
    std::thread::scope(|scope| {
        let opener = std::thread::Builder::new()
            .name("quiver-index-open".into())
            .spawn_scoped(scope, || {
                lower_current_thread();
                ViewIndex::open(dir)
            })
            .map_err(|e| {
                Error::with_message(
                    ErrorCode::Internal,
                    format!("starting a thread to open a search index: {e}"),
                )
            })?;
        opener.join().unwrap_or_else(|_| {
            Err(Error::with_message(
                ErrorCode::Internal,
                "opening a search index panicked",
            ))
        })
    })
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    /// The nice value of thread `tid` of this process, from `/proc`.
    fn nice_of(tid: &str) -> i32 {
        let stat = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")).unwrap();
        // Field 19 is the nice value; fields after the command's closing parenthesis start
        // at field 3.
        let fields: Vec<&str> = stat
            .rsplit_once(')')
            .unwrap()
            .1
            .split_whitespace()
            .collect();
        fields[16].parse().unwrap()
    }

    /// The nice values of this process's threads named `name` (as /proc shortens it).
    fn nice_of_threads(name: &str) -> Vec<i32> {
        let mut found = Vec::new();
        for entry in std::fs::read_dir("/proc/self/task").unwrap() {
            let tid = entry.unwrap().file_name().into_string().unwrap();
            let Ok(comm) = std::fs::read_to_string(format!("/proc/self/task/{tid}/comm")) else {
                continue;
            };
            if comm.trim() == name {
                found.push(nice_of(&tid));
            }
        }
        found
    }

    /// [`nice_of_threads`] once threads of that name exist: a spawned thread names itself
    /// after it starts, so on a loaded machine the name can lag the spawn. Gives up after
    /// five seconds (bounded) and returns what it found.
    fn named_threads_nice(name: &str) -> Vec<i32> {
        for _ in 0..100 {
            let found = nice_of_threads(name);
            if !found.is_empty() {
                return found;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        nice_of_threads(name)
    }

    // Run at nice 19 (as `nice -n 19 cargo test` does) these only see that nothing is
    // raised; the end-to-end test
    // `test_views.py::test_search_threads_run_at_the_background_priority` starts a server
    // with `--arangosearch.nice 15` and reads its threads' nice values.
    #[test]
    fn a_thread_is_lowered_never_raised() {
        let base = std::thread::spawn(|| lower_current_thread_to(0).unwrap())
            .join()
            .unwrap();
        let target = (base + 5).min(MAX_NICE);
        let (lowered, kept) = std::thread::spawn(move || {
            let lowered = lower_current_thread_to(target).unwrap();
            // Asking for a higher priority afterwards leaves the thread where it is.
            let kept = lower_current_thread_to(base).unwrap();
            (lowered, kept)
        })
        .join()
        .unwrap();
        assert_eq!(lowered, target);
        assert_eq!(kept, target);
        // The thread that spawned them keeps its own priority.
        assert_eq!(lower_current_thread_to(0).unwrap(), base);
    }

    #[test]
    fn threads_of_an_opened_index_inherit_the_lowered_priority() {
        let base = lower_current_thread_to(0).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let (index, _) = open_index(dir.path()).unwrap();
        let expected = base.max(search_nice());
        // Tantivy's merge pool and its indexing threads were spawned by the opening thread.
        let merge = named_threads_nice("merge_thread_0");
        assert!(!merge.is_empty(), "tantivy's merge threads are running");
        assert!(
            merge.iter().all(|n| *n >= expected),
            "{merge:?} < {expected}"
        );
        let indexing = named_threads_nice("thrd-tantivy-in");
        assert!(
            !indexing.is_empty(),
            "tantivy's indexing threads are running"
        );
        assert!(indexing.iter().all(|n| *n >= expected), "{indexing:?}");
        index.close();
        // The calling thread is unchanged.
        assert_eq!(lower_current_thread_to(0).unwrap(), base);
    }
}
