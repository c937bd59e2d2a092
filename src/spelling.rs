//! Did-you-mean: the edit distance every "did you mean" hint ranks its
//! candidates by (rule names, metric ids, baselines, harness metrics). A
//! leaf: it imports nothing, so any room may use it.

/// Edit distance (insertions, deletions, substitutions) between two words.
pub(crate) fn levenshtein(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur.push(sub.min(prev[j + 1] + 1).min(cur[j] + 1));
        }
        prev = cur;
    }
    prev[b.len()]
}
