//! The process being measured: launched from argv (never through a shell)
//! or attached by PID. Owns its process tree, its stdout pass-through and
//! its exit status.
//!
//! A launched command runs in its own process group so that gate can stop
//! the whole tree (DataLoader workers included) when the window ends, and
//! forwards Ctrl-C to it. An attached process is never signalled.

use crate::console::Echo;
use crate::error::GateError;
use std::io::{BufRead, BufReader};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, Receiver};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How a target ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExitInfo {
    pub code: Option<i32>,
    pub signal: Option<i32>,
    pub at: Instant,
}

/// Grace period between SIGTERM and SIGKILL when gate stops a command.
pub const STOP_GRACE: Duration = Duration::from_secs(10);

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_sig: libc::c_int) {
    INTERRUPTED.store(true, Ordering::SeqCst);
}

/// Catch SIGINT/SIGTERM so the trace is finished properly instead of lost.
pub fn install_interrupt_handler() {
    // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
    unsafe {
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
    }
}

pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

pub enum Target {
    Launched {
        pid: u32,
        started: Instant,
        exit_rx: Receiver<ExitInfo>,
        exit: Option<ExitInfo>,
        output_rx: Receiver<(Instant, String)>,
        reader: Option<JoinHandle<()>>,
    },
    Attached {
        pid: u32,
        exit: Option<ExitInfo>,
    },
}

impl Target {
    /// Start `argv` with stdout piped through gate (kept for the trace and
    /// passed on to `echo`: gate's stderr when gate's stdout carries a
    /// report), stderr and stdin inherited.
    pub fn launch(argv: &[String], echo: Echo) -> Result<Target, GateError> {
        let (program, args) = argv
            .split_first()
            .ok_or_else(|| GateError::usage("no command given after '--'"))?;
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::inherit())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .process_group(0)
            .spawn()
            .map_err(|e| {
                GateError::usage(format!(
                    "cannot start '{program}': {e}; check the command after '--' (it runs without a shell, so PATH lookup only)"
                ))
            })?;
        let started = Instant::now();
        let pid = child.id();
        let stdout = child.stdout.take().expect("stdout is piped");
        let (output_tx, output_rx) = channel();
        let reader = std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            let mut buf = Vec::new();
            loop {
                buf.clear();
                match reader.read_until(b'\n', &mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        let now = Instant::now();
                        crate::console::echo_line(echo, &buf);
                        let line = String::from_utf8_lossy(&buf)
                            .trim_end_matches(['\n', '\r'])
                            .to_string();
                        let _ = output_tx.send((now, line));
                    }
                }
            }
        });
        let (exit_tx, exit_rx) = channel();
        std::thread::spawn(move || {
            let status = child.wait();
            let at = Instant::now();
            let info = match status {
                Ok(s) => ExitInfo {
                    code: s.code(),
                    signal: s.signal(),
                    at,
                },
                Err(_) => ExitInfo {
                    code: None,
                    signal: None,
                    at,
                },
            };
            let _ = exit_tx.send(info);
        });
        Ok(Target::Launched {
            pid,
            started,
            exit_rx,
            exit: None,
            output_rx,
            reader: Some(reader),
        })
    }

    /// Watch an existing process; it is never signalled or restarted.
    pub fn attach(pid: u32) -> Result<Target, GateError> {
        if !process_alive(pid) {
            return Err(GateError::usage(format!(
                "--pid {pid}: no such running process; check the PID (e.g. with 'pgrep -f train.py')"
            )));
        }
        Ok(Target::Attached { pid, exit: None })
    }

    pub fn pid(&self) -> u32 {
        match self {
            Target::Launched { pid, .. } | Target::Attached { pid, .. } => *pid,
        }
    }

    pub fn started(&self) -> Option<Instant> {
        match self {
            Target::Launched { started, .. } => Some(*started),
            Target::Attached { .. } => None,
        }
    }

    /// Non-blocking: has the target ended?
    pub fn poll_exit(&mut self) -> Option<ExitInfo> {
        match self {
            Target::Launched { exit_rx, exit, .. } => {
                if exit.is_none() {
                    *exit = exit_rx.try_recv().ok();
                }
                *exit
            }
            Target::Attached { pid, exit } => {
                if exit.is_none() && !process_alive(*pid) {
                    *exit = Some(ExitInfo {
                        code: None,
                        signal: None,
                        at: Instant::now(),
                    });
                }
                *exit
            }
        }
    }

    /// Lines printed on stdout since the last call, with when they arrived.
    pub fn drain_output(&self) -> Vec<(Instant, String)> {
        match self {
            Target::Launched { output_rx, .. } => output_rx.try_iter().collect(),
            Target::Attached { .. } => Vec::new(),
        }
    }

    /// Stop a launched command's process group: `sig` first, SIGKILL after
    /// `grace`. Returns how it ended. Attached targets are left alone.
    pub fn stop(&mut self, sig: libc::c_int, grace: Duration) -> Option<ExitInfo> {
        let Target::Launched { pid, .. } = self else {
            return None;
        };
        let pgid = *pid as libc::pid_t;
        // SAFETY: kill(2) on our own child's process group.
        unsafe {
            libc::kill(-pgid, sig);
        }
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline {
            if let Some(e) = self.poll_exit() {
                return Some(e);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        unsafe {
            libc::kill(-pgid, libc::SIGKILL);
        }
        self.wait()
    }

    /// Block until a launched target exits and its stdout is drained.
    pub fn wait(&mut self) -> Option<ExitInfo> {
        if let Target::Launched {
            exit_rx,
            exit,
            reader,
            ..
        } = self
        {
            if exit.is_none() {
                *exit = exit_rx.recv().ok();
            }
            if let Some(r) = reader.take() {
                // The reader ends at EOF; a grandchild holding stdout open
                // would keep it alive, so don't wait on it forever.
                let deadline = Instant::now() + Duration::from_secs(2);
                while !r.is_finished() && Instant::now() < deadline {
                    std::thread::sleep(Duration::from_millis(10));
                }
                if r.is_finished() {
                    let _ = r.join();
                }
            }
            return *exit;
        }
        self.poll_exit()
    }
}

/// Alive and not a zombie.
pub fn process_alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rfind(')')
            .and_then(|i| stat[i + 1..].split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X"),
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn launch_passes_exit_code_and_output() {
        let argv: Vec<String> = ["sh", "-c", "echo 'samples_per_s: 12.5'; exit 7"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let mut t = Target::launch(&argv, Echo::Stderr).unwrap();
        let exit = t.wait().unwrap();
        assert_eq!(exit.code, Some(7));
        let lines: Vec<String> = t.drain_output().into_iter().map(|(_, l)| l).collect();
        assert_eq!(lines, vec!["samples_per_s: 12.5".to_string()]);
    }

    #[test]
    fn missing_program_is_a_usage_error_naming_it() {
        let err = match Target::launch(&["definitely-not-a-program-xyz".to_string()], Echo::Stderr)
        {
            Err(e) => e,
            Ok(_) => panic!("spawned a missing program"),
        };
        assert_eq!(err.exit_code(), crate::exit_code::USAGE);
        assert!(err.to_string().contains("definitely-not-a-program-xyz"));
    }

    #[test]
    fn stop_terminates_the_whole_group() {
        let argv: Vec<String> = ["sh", "-c", "sleep 30 & sleep 30"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let mut t = Target::launch(&argv, Echo::Stderr).unwrap();
        std::thread::sleep(Duration::from_millis(100));
        let exit = t.stop(libc::SIGTERM, Duration::from_secs(5)).unwrap();
        assert_eq!(exit.signal, Some(libc::SIGTERM));
    }

    #[test]
    fn attach_to_missing_pid_fails_clearly() {
        let err = match Target::attach(u32::MAX - 1) {
            Err(e) => e,
            Ok(_) => panic!("attached to a missing pid"),
        };
        assert!(err.to_string().contains("no such running process"));
    }
}
