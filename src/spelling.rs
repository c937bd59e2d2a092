//! Did-you-mean: the edit distance every "did you mean" hint ranks its
//! candidates by (rule names, metric ids, baselines, harness metrics). A
//! leaf: it imports nothing, so any room may use it.

/// Edit distance (insertions, deletions, substitutions) between two words,
/// in characters (strsim).
pub(crate) fn levenshtein(a: &str, b: &str) -> usize {
    strsim::levenshtein(a, b)
}
