//! The line on stderr that counts objects as they arrive, for reads that take more than a moment.
//! Only drawn when stderr is a terminal; erased when the read ends.

use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

/// Reads shorter than this show nothing.
const DELAY: Duration = Duration::from_millis(600);
const TICK: Duration = Duration::from_millis(120);

pub struct Kind {
    pub name: &'static str,
    count: AtomicUsize,
    done: AtomicBool,
}

/// Counters per kind, updated by the lists and read by the drawing task.
#[derive(Default)]
pub struct Progress {
    kinds: std::sync::Mutex<Vec<Arc<Kind>>>,
}

impl Progress {
    pub fn kind(&self, name: &'static str) -> Arc<Kind> {
        let mut kinds = self.kinds.lock().expect("progress lock");
        if let Some(k) = kinds.iter().find(|k| k.name == name) {
            return k.clone();
        }
        let k = Arc::new(Kind {
            name,
            count: AtomicUsize::new(0),
            done: AtomicBool::new(false),
        });
        kinds.push(k.clone());
        k
    }

    /// "reading the cluster: 5000 nodes, 120500 pods, 812 other objects (9/16 kinds done)"
    pub fn line(&self) -> String {
        let kinds = self.kinds.lock().expect("progress lock");
        let count = |name: &str| {
            kinds
                .iter()
                .find(|k| k.name == name)
                .map_or(0, |k| k.count.load(Ordering::Relaxed))
        };
        let others: usize = kinds
            .iter()
            .filter(|k| k.name != "nodes" && k.name != "pods")
            .map(|k| k.count.load(Ordering::Relaxed))
            .sum();
        let done = kinds
            .iter()
            .filter(|k| k.done.load(Ordering::Relaxed))
            .count();
        format!(
            "reading the cluster: {} nodes, {} pods, {others} other objects ({done}/{} kinds done)",
            count("nodes"),
            count("pods"),
            kinds.len()
        )
    }
}

impl Kind {
    pub fn add(&self, n: usize) {
        self.count.fetch_add(n, Ordering::Relaxed);
    }
    /// A list restarted (its continue token expired): its count starts again.
    pub fn reset(&self) {
        self.count.store(0, Ordering::Relaxed);
    }
    pub fn finish(&self) {
        self.done.store(true, Ordering::Relaxed);
    }
}

/// The drawing task; dropping it (or `stop`) erases the line if one was drawn.
pub struct Indicator {
    task: Option<tokio::task::JoinHandle<()>>,
    drawn: Arc<AtomicBool>,
    stopped: Arc<AtomicBool>,
}

impl Indicator {
    /// Starts drawing after `DELAY` if `enabled` (stderr is a terminal).
    pub fn start(progress: Arc<Progress>, enabled: bool) -> Indicator {
        let drawn = Arc::new(AtomicBool::new(false));
        let stopped = Arc::new(AtomicBool::new(false));
        let task = enabled.then(|| {
            let (drawn, stopped) = (drawn.clone(), stopped.clone());
            tokio::spawn(async move {
                tokio::time::sleep(DELAY).await;
                loop {
                    let line = progress.line();
                    {
                        let mut err = std::io::stderr().lock();
                        // `stop` may run on another thread; it sets the flag before taking the lock.
                        if stopped.load(Ordering::SeqCst) {
                            return;
                        }
                        let _ = write!(err, "\r\x1b[2K{line}");
                        let _ = err.flush();
                        drawn.store(true, Ordering::SeqCst);
                    }
                    tokio::time::sleep(TICK).await;
                }
            })
        });
        Indicator {
            task,
            drawn,
            stopped,
        }
    }

    pub fn stop(&mut self) {
        if let Some(task) = self.task.take() {
            self.stopped.store(true, Ordering::SeqCst);
            task.abort();
            let mut err = std::io::stderr().lock();
            if self.drawn.load(Ordering::SeqCst) {
                let _ = write!(err, "\r\x1b[2K");
                let _ = err.flush();
            }
        }
    }
}

impl Drop for Indicator {
    fn drop(&mut self) {
        self.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_per_kind() {
        let p = Progress::default();
        let nodes = p.kind("nodes");
        let pods = p.kind("pods");
        let pdbs = p.kind("poddisruptionbudgets");
        nodes.add(3);
        pods.add(500);
        pods.add(20);
        pdbs.add(2);
        nodes.finish();
        assert_eq!(
            p.line(),
            "reading the cluster: 3 nodes, 520 pods, 2 other objects (1/3 kinds done)"
        );
        pods.reset();
        assert!(p.line().contains(" 0 pods"));
        assert!(Arc::ptr_eq(&p.kind("nodes"), &nodes));
    }
}
