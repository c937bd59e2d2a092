//! Is the run of the baseline's benchmark? (issue 17.5). A trace of another
//! program checked against a baseline gave a confident -99.9 % regression
//! with a cause and no word that the command differed.
//!
//! Two levels, because arguments legitimately differ between runs of one
//! benchmark: every recorded family in `fixtures/` varies `--seed` between
//! its healthy runs, and CI runs pass per-job output paths and run ids.
//!
//! - The benchmark's **identity**: the program's file name and its script
//!   (the argument after `-m`, else the first argument that names a script
//!   file), plus the tags that `[compare] tags` lists. A difference makes
//!   the run not comparable (verdict `invalid`, like another GPU count),
//!   unless `[compare] allow_command_change = true` (or
//!   `--allow-command-change`): then a warning.
//! - Everything else (other arguments, other tags): a warning that names
//!   the differences, or not comparable with `[compare] arguments =
//!   "refuse"`.
//!
//! Absolute paths are compared by file name (`/builds/a/train.py` and
//! `/home/runner/train.py` are the same script); an empty command (a
//! baseline from before commands were recorded, an attached PID without
//! one) compares as unknown, never as different.

use std::collections::BTreeMap;

/// File extensions that name a script run by an interpreter.
const SCRIPT_EXTENSIONS: [&str; 9] = [
    ".py", ".sh", ".js", ".rb", ".pl", ".jl", ".lua", ".r", ".ts",
];

/// An argument as compared: absolute paths by their file name.
fn normalized(arg: &str) -> &str {
    if arg.starts_with('/') {
        arg.rsplit('/').next().unwrap_or(arg)
    } else {
        arg
    }
}

/// The benchmark's identity: program file name, then its script or module.
pub(crate) fn identity(command: &[String]) -> Vec<String> {
    let Some(program) = command.first() else {
        return Vec::new();
    };
    let program = program.rsplit('/').next().unwrap_or(program).to_string();
    let args = &command[1..];
    let module = args
        .iter()
        .position(|a| a == "-m")
        .and_then(|i| args.get(i + 1));
    let script = module.or_else(|| {
        args.iter().find(|a| {
            let lower = a.to_ascii_lowercase();
            !a.starts_with('-') && SCRIPT_EXTENSIONS.iter().any(|e| lower.ends_with(e))
        })
    });
    let mut id = vec![program];
    // A script by its file name: checkouts put it under other folders.
    id.extend(script.map(|s| s.rsplit('/').next().unwrap_or(s).to_string()));
    id
}

/// `command` without the flags `vary` lists and their values (`--seed 3`,
/// `--seed=3`): what differs by design between runs of one benchmark.
pub(crate) fn without_varying(command: &[String], vary: &[String]) -> Vec<String> {
    let mut out = Vec::with_capacity(command.len());
    let mut skip_value = false;
    for a in command {
        if std::mem::take(&mut skip_value) {
            continue;
        }
        let flag = a.split_once('=').map_or(a.as_str(), |(f, _)| f);
        if a.starts_with('-') && vary.iter().any(|v| v == flag) {
            skip_value = !a.contains('=');
            continue;
        }
        out.push(a.clone());
    }
    out
}

/// What differs between the baseline's run and this one.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Differences {
    /// Program, script or a `[compare] tags` tag: another benchmark.
    pub(crate) identity: Vec<String>,
    /// Other arguments or tags.
    pub details: Vec<String>,
}

/// Compare the baseline's command and tags with a run's.
pub(crate) fn differences(
    base_command: &[String],
    base_tags: &BTreeMap<String, String>,
    command: &[String],
    tags: &BTreeMap<String, String>,
    identity_tags: &[String],
) -> Differences {
    let mut d = Differences::default();
    if !base_command.is_empty() && !command.is_empty() {
        let (a, b) = (identity(base_command), identity(command));
        if a != b {
            d.identity.push(format!(
                "the baseline ran '{}', this run '{}'",
                a.join(" "),
                b.join(" ")
            ));
        } else {
            let norm = |c: &[String]| -> Vec<String> {
                c.iter()
                    .skip(1)
                    .map(|a| normalized(a).to_string())
                    .collect()
            };
            let (na, nb) = (norm(base_command), norm(command));
            if na != nb {
                d.details.push(format!(
                    "arguments '{}' in the baseline, '{}' in this run",
                    na.join(" "),
                    nb.join(" ")
                ));
            }
        }
    }
    for (key, base_value) in base_tags {
        let Some(value) = tags.get(key) else {
            continue;
        };
        if value == base_value {
            continue;
        }
        let text = format!("tag {key} = '{base_value}' in the baseline, '{value}' in this run");
        if identity_tags.iter().any(|k| k == key) {
            d.identity.push(text);
        } else {
            d.details.push(text);
        }
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn varying_flags_go_with_their_value() {
        let vary = v("--seed fixture");
        assert_eq!(
            without_varying(&v("python3 t.py --seed 3 --steps 5 --seed=4 -s 1"), &vary),
            v("python3 t.py --steps 5 -s 1")
        );
        // A listed word that is no flag is an argument like any other.
        assert_eq!(
            without_varying(&v("python3 t.py fixture"), &vary),
            v("python3 t.py fixture")
        );
    }

    #[test]
    fn identity_is_program_and_script_or_module() {
        assert_eq!(
            identity(&v("/usr/bin/python3 /builds/x/train.py --seed 1")),
            v("python3 train.py")
        );
        assert_eq!(
            identity(&v("torchrun --nproc-per-node 2 fixtures/ddp.py")),
            v("torchrun ddp.py")
        );
        assert_eq!(
            identity(&v("python -m bench.run --n 3")),
            v("python bench.run")
        );
        assert_eq!(identity(&v("./bench --iters 10")), v("bench"));
        assert!(identity(&[]).is_empty());
    }

    #[test]
    fn seeds_and_paths_are_details_another_script_is_another_benchmark() {
        let none = BTreeMap::new();
        let d = differences(
            &v("python3 /a/train.py --seed 1"),
            &none,
            &v("python3 /b/train.py --seed 1"),
            &none,
            &[],
        );
        assert_eq!(d, Differences::default(), "same script, other checkout");
        let d = differences(
            &v("python3 train.py --seed 1"),
            &none,
            &v("python3 train.py --seed 2"),
            &none,
            &[],
        );
        assert!(d.identity.is_empty() && d.details.len() == 1, "{d:?}");
        let d = differences(
            &v("python3 train.py"),
            &none,
            &v("python3 infer.py"),
            &none,
            &[],
        );
        assert_eq!(d.identity.len(), 1, "{d:?}");
        // Unknown on either side: nothing to compare.
        assert_eq!(
            differences(&[], &none, &v("python3 x.py"), &none, &[]),
            Differences::default()
        );
    }

    #[test]
    fn listed_tags_are_identity_others_details_missing_ones_unknown() {
        let t = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        let base = t(&[("model", "resnet50"), ("fixture", "a")]);
        let run = t(&[("model", "vit"), ("fixture", "b")]);
        let d = differences(&[], &base, &[], &run, &["model".into()]);
        assert_eq!((d.identity.len(), d.details.len()), (1, 1), "{d:?}");
        let d = differences(&[], &base, &[], &t(&[]), &["model".into()]);
        assert_eq!(d, Differences::default());
    }
}
