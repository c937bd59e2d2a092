//! Which `gate.toml` a command uses when `--config` is not given: the one
//! in the current directory, or else the nearest one above it up to the
//! repository root (the first directory holding `.git`), the way cargo
//! finds `Cargo.toml` and git finds `.git`. Found above, `baselines/` is
//! the one beside it, and the command says which file it used.

use std::path::{Path, PathBuf};

/// Directories climbed at most (a deep tree without `.git` ends at `/`
/// long before).
const MAX_LEVELS: usize = 64;

/// A `gate.toml` found above the current directory: its path and its
/// directory, both relative to the current directory (`../../gate.toml`,
/// `../..`), so messages and `git show REF:./PATH` read them as given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    pub config: PathBuf,
    pub dir: PathBuf,
}

/// The nearest `gate.toml` strictly above `start` (`start` itself is the
/// default's own place), not beyond the repository root. None: the
/// current directory's (present or not) is the one to use.
pub fn find_above(start: &Path) -> Option<Found> {
    if start.join("gate.toml").is_file() || start.join(".git").exists() {
        return None;
    }
    let mut dir = start.to_path_buf();
    let mut up = PathBuf::new();
    for _ in 0..MAX_LEVELS {
        dir = dir.parent()?.to_path_buf();
        up.push("..");
        if dir.join("gate.toml").is_file() {
            return Some(Found {
                config: up.join("gate.toml"),
                dir: up,
            });
        }
        if dir.join(".git").exists() {
            return None;
        }
    }
    None
}

/// Fills `config` (and a default `baselines` directory) with the
/// `gate.toml` found above the current directory, and says so on stderr.
/// An explicit `--config` wins and nothing is looked up.
pub fn use_found(config: &mut Option<PathBuf>, baseline_dir: Option<&mut PathBuf>) {
    if config.is_some() {
        return;
    }
    let Some(found) = std::env::current_dir().ok().and_then(|d| find_above(&d)) else {
        return;
    };
    let mut note = format!(
        "gate: using '{}' (the nearest gate.toml above the current directory)",
        found.config.display()
    );
    if let Some(dir) = baseline_dir {
        if dir.as_path() == Path::new("baselines") {
            *dir = found.dir.join("baselines");
            note.push_str(&format!(" and the baselines in '{}'", dir.display()));
        }
    }
    crate::gate_eprintln!("{}", crate::escape::terminal(&note));
    *config = Some(found.config);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_above_up_to_the_repository_root() {
        let root = tempfile::tempdir().unwrap();
        let repo = root.path().join("repo");
        let deep = repo.join("a/b");
        std::fs::create_dir_all(&deep).unwrap();
        std::fs::create_dir(repo.join(".git")).unwrap();
        // Above the repository: never used.
        std::fs::write(root.path().join("gate.toml"), "").unwrap();
        assert_eq!(find_above(&deep), None);
        std::fs::write(repo.join("gate.toml"), "").unwrap();
        assert_eq!(
            find_above(&deep),
            Some(Found {
                config: PathBuf::from("../../gate.toml"),
                dir: PathBuf::from("../.."),
            })
        );
        // The current directory's own is the default: nothing to find.
        assert_eq!(find_above(&repo), None);
        std::fs::write(deep.join("gate.toml"), "").unwrap();
        assert_eq!(find_above(&deep), None);
    }
}
