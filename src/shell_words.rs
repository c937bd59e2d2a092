//! Splitting one string into argv words for CI inputs that can only be
//! strings (`--command-string`, `--args-string`): POSIX shell quoting rules
//! through the `shlex` crate, and nothing else a shell would do. No variable,
//! glob, tilde or `$(...)` expansion, no redirection or pipes: `$HOME` stays
//! the five characters `$HOME`, so no input is ever evaluated.

/// Split `text` like a shell line; `what` names the input in errors.
///
/// ```
/// use gpugate::shell_words::split;
/// assert_eq!(
///     split(r#"python train.py --tag "a b" 'x $(y)'"#, "--command-string").unwrap(),
///     vec!["python", "train.py", "--tag", "a b", "x $(y)"]
/// );
/// assert!(split("python 'unbalanced", "--command-string").is_err());
/// ```
pub fn split(text: &str, what: &str) -> Result<Vec<String>, String> {
    if text.contains('\0') {
        return Err(format!(
            "{what}: contains a NUL byte, which no argument can hold"
        ));
    }
    shlex::split(text).ok_or_else(|| {
        format!(
            "{what} '{}' is not a valid shell-like line (an unclosed quote or a trailing backslash); quote words with '...' or \"...\"",
            text.escape_debug()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::split;

    #[test]
    fn quotes_group_and_nothing_expands() {
        assert_eq!(
            split("bash -c 'echo $HOME | wc -c' \"a\\\"b\" `id` ~ *.py", "x").unwrap(),
            vec![
                "bash",
                "-c",
                "echo $HOME | wc -c",
                "a\"b",
                "`id`",
                "~",
                "*.py"
            ]
        );
        assert_eq!(split("  ", "x").unwrap(), Vec::<String>::new());
        assert_eq!(
            split("--warmup-until '^step 20 '", "x").unwrap(),
            vec!["--warmup-until", "^step 20 "]
        );
    }

    #[test]
    fn errors_name_the_input_on_one_line() {
        let e = split("python \"oops\nmore", "--command-string").unwrap_err();
        assert!(e.starts_with("--command-string "), "{e}");
        assert!(!e.contains('\n'), "{e}");
        assert!(split("a\0b", "--args-string").unwrap_err().contains("NUL"));
    }
}
