//! Fast path for the one record a trace is made of: a `sample` line parsed
//! into one reused row of f32 values, which the loader then appends to its
//! columns, with no intermediate `Vec<Vec<Option<f64>>>` per line (that
//! allocation and the generic serde machinery were most of `gate check`'s
//! time on long traces).
//!
//! It accepts exactly the shape `TraceWriter` writes:
//! `{"type":"sample","t":NUM[,"w":BOOL],"g":[[V,...],...],"h":[V,...]}`
//! with V a number or `null` and no whitespace. Anything else (another
//! record type, whitespace, an unknown field, a number outside the range
//! below, a wrong shape) returns `None` and the caller parses the line with
//! serde as before, so errors and edge cases keep one implementation and one
//! message.
//!
//! Numbers are converted to the correctly rounded f64, as serde_json does
//! with its `float_roundtrip` feature (enabled in Cargo.toml, so test and
//! release builds parse alike): a significand below 2^53 with an exponent up
//! to 22 is one multiplication or division of two exact values (correctly
//! rounded by IEEE 754); anything longer goes through `str::parse::<f64>`
//! (correctly rounded). The loaded values are therefore bit for bit those of
//! the serde path (`trace::tests::fast_path_equals_serde_path`).

/// Exact powers of ten, 1e0..=1e22 (all exactly representable in f64, so
/// identical to serde_json's table entries).
const POW10: [f64; 23] = {
    let mut t = [1.0f64; 23];
    let mut i = 1;
    while i < 23 {
        t[i] = t[i - 1] * 10.0;
        i += 1;
    }
    t
};

/// One sample line's values: the row the parser fills (reused from line to
/// line, so a line allocates nothing).
#[derive(Debug, Default)]
pub(super) struct Row {
    pub t: f64,
    pub w: bool,
    /// `[gpu][gpu_column]`, flattened; NaN for null.
    pub gpu: Vec<f32>,
    /// `[host_column]`; NaN for null.
    pub host: Vec<f32>,
}

const PREFIX: &[u8] = b"{\"type\":\"sample\",\"t\":";

/// Parse `line` (without its newline) into `row`, a sample of `ngpu` GPUs
/// of `ncols` columns and `nhost` host columns. Returns false when the line
/// is not in the exact writer shape (`row` then holds nothing of use).
pub(super) fn parse_into(
    line: &[u8],
    ngpu: usize,
    ncols: usize,
    nhost: usize,
    row: &mut Row,
) -> bool {
    if !line.starts_with(PREFIX) {
        return false;
    }
    row.gpu.clear();
    row.host.clear();
    parse_body(&line[PREFIX.len()..], ngpu, ncols, nhost, row).is_some()
}

fn parse_body(s: &[u8], ngpu: usize, ncols: usize, nhost: usize, row: &mut Row) -> Option<()> {
    let mut p = Cursor { s, i: 0 };
    let t = p.number()?;
    let mut w = false;
    p.expect(b",\"")?;
    if p.eat(b"w\":") {
        w = if p.eat(b"true") {
            true
        } else if p.eat(b"false") {
            false
        } else {
            return None;
        };
        p.expect(b",\"")?;
    }
    p.expect(b"g\":[")?;
    for g in 0..ngpu {
        if g > 0 {
            p.expect(b",")?;
        }
        p.expect(b"[")?;
        p.values(ncols, &mut row.gpu)?;
        p.expect(b"]")?;
    }
    p.expect(b"],\"h\":[")?;
    p.values(nhost, &mut row.host)?;
    p.expect(b"]}")?;
    if p.i != s.len() {
        return None;
    }
    row.t = t;
    row.w = w;
    Some(())
}

struct Cursor<'a> {
    s: &'a [u8],
    i: usize,
}

impl Cursor<'_> {
    fn eat(&mut self, lit: &[u8]) -> bool {
        if self.s[self.i..].starts_with(lit) {
            self.i += lit.len();
            true
        } else {
            false
        }
    }

    fn expect(&mut self, lit: &[u8]) -> Option<()> {
        self.eat(lit).then_some(())
    }

    /// Exactly `n` comma-separated values (number or null) as f32, NaN for
    /// null; the closing bracket is left for the caller.
    fn values(&mut self, n: usize, out: &mut Vec<f32>) -> Option<()> {
        if n == 0 {
            return Some(());
        }
        for k in 0..n {
            if k > 0 {
                self.expect(b",")?;
            }
            if self.eat(b"null") {
                out.push(f32::NAN);
            } else {
                out.push(self.number()? as f32);
            }
        }
        Some(())
    }

    /// A JSON number as serde_json makes it an f64; None when this fast
    /// path does not take it (the caller falls back to serde).
    fn number(&mut self) -> Option<f64> {
        let s = self.s;
        let start_i = self.i;
        let mut i = self.i;
        let negative = s.get(i) == Some(&b'-');
        if negative {
            i += 1;
        }
        let mut significand: u64 = match s.get(i) {
            Some(b'0') => {
                i += 1;
                if matches!(s.get(i), Some(b'0'..=b'9')) {
                    return None; // leading zero: serde's error
                }
                0
            }
            Some(&c @ b'1'..=b'9') => {
                i += 1;
                (c - b'0') as u64
            }
            _ => return None,
        };
        // Digits in the significand: up to 19 cannot overflow a u64 (more
        // are declined below, to serde), so no checked arithmetic per digit.
        let mut digits = 1u32;
        while let Some(&c) = s.get(i) {
            let d = c.wrapping_sub(b'0');
            if d > 9 {
                break;
            }
            significand = significand.wrapping_mul(10).wrapping_add(d as u64);
            digits += 1;
            i += 1;
        }
        let mut exponent: i32 = 0;
        if s.get(i) == Some(&b'.') {
            i += 1;
            let start = i;
            while let Some(&c) = s.get(i) {
                let d = c.wrapping_sub(b'0');
                if d > 9 {
                    break;
                }
                significand = significand.wrapping_mul(10).wrapping_add(d as u64);
                i += 1;
            }
            if i == start {
                return None;
            }
            digits += (i - start) as u32;
            exponent = -((i - start).min(1 << 20) as i32);
        }
        if digits > 19 {
            return None;
        }
        if matches!(s.get(i), Some(b'e' | b'E')) {
            let e;
            (e, i) = exponent_part(s, i + 1)?;
            exponent = exponent.checked_add(e)?;
        }
        let f = match POW10.get(exponent.unsigned_abs() as usize) {
            Some(&pow) if significand <= 1 << 53 => {
                let m = significand as f64;
                if exponent >= 0 {
                    m * pow
                } else {
                    m / pow
                }
            }
            // Too many digits for one exact operation: the correctly
            // rounded parse of the token (sign handled below).
            _ => {
                let digits = &s[start_i + usize::from(negative)..i];
                std::str::from_utf8(digits).ok()?.parse::<f64>().ok()?
            }
        };
        if !f.is_finite() {
            return None;
        }
        self.i = i;
        Some(if negative { -f } else { f })
    }
}

/// The exponent after `e`/`E` (its sign and digits from `i`) and the index
/// after it; None when it has no digit or overflows an i32.
fn exponent_part(s: &[u8], mut i: usize) -> Option<(i32, usize)> {
    let negative = match s.get(i) {
        Some(b'-') => {
            i += 1;
            true
        }
        Some(b'+') => {
            i += 1;
            false
        }
        _ => false,
    };
    let start = i;
    let mut e: i32 = 0;
    while let Some(&c @ b'0'..=b'9') = s.get(i) {
        e = e.checked_mul(10)?.checked_add((c - b'0') as i32)?;
        i += 1;
    }
    if i == start {
        return None;
    }
    Some((if negative { e.checked_neg()? } else { e }, i))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_one(
        text: &str,
        ngpu: usize,
        ncols: usize,
        nhost: usize,
    ) -> Option<(f64, bool, Vec<f32>, Vec<f32>)> {
        let mut row = Row::default();
        if !parse_into(text.as_bytes(), ngpu, ncols, nhost, &mut row) {
            return None;
        }
        Some((row.t, row.w, row.gpu, row.host))
    }

    /// serde_json's own conversion of a number token, for comparison.
    fn serde_f64(tok: &str) -> f64 {
        serde_json::from_str::<f64>(tok).unwrap()
    }

    #[test]
    fn numbers_convert_exactly_like_serde_json() {
        let mut toks: Vec<String> = [
            "0",
            "-0",
            "0.0",
            "-0.0",
            "1",
            "97.46",
            "0.043",
            "20270.0",
            "1e3",
            "1E-3",
            "2.5e+2",
            "123456.789012345678",
            "1234567890123456789",
            "0.30000000000000004",
            "99999.99",
            "1.7976931348623157e2",
            "4.9e-5",
            "100.00000000000001",
            "3.14159265358979",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        // Times as the recorder writes them: f64 milliseconds, shortest form.
        let mut x = 7u64;
        for _ in 0..2000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let ms = (x >> 20) as f64 / 1e3 + (x & 0xff) as f64 * 1e-9;
            toks.push(serde_json::to_string(&ms).unwrap());
            toks.push(serde_json::to_string(&crate::trace::round_value(ms / 7.0)).unwrap());
        }
        for tok in &toks {
            let mut c = Cursor {
                s: tok.as_bytes(),
                i: 0,
            };
            match c.number() {
                Some(v) => {
                    assert_eq!(c.i, tok.len(), "{tok}");
                    assert_eq!(v.to_bits(), serde_f64(tok).to_bits(), "{tok}");
                }
                _ => {
                    // Declined: fine, serde takes it. Only out-of-range forms may be.
                    assert!(
                        tok.len() > 18 || tok.contains('e') || tok.contains('E'),
                        "{tok}"
                    );
                }
            }
        }
    }

    #[test]
    fn writer_shape_is_taken_anything_else_is_declined() {
        let (t, w, g, h) = parse_one(
            r#"{"type":"sample","t":100.5,"w":true,"g":[[1.0,null],[2,3.25]],"h":[null]}"#,
            2,
            2,
            1,
        )
        .unwrap();
        assert_eq!((t, w), (100.5, true));
        assert_eq!(g[0], 1.0);
        assert!(g[1].is_nan());
        assert_eq!(&g[2..], &[2.0, 3.25]);
        assert!(h[0].is_nan());
        let ok = r#"{"type":"sample","t":1.0,"g":[[1.0]],"h":[]}"#;
        assert!(parse_one(ok, 1, 1, 0).is_some());
        for bad in [
            r#"{"type":"sample","t":1.0,"g":[[1.0]],"h":[]}"#, // wrong shape for (2, 1, 0)
            r#"{"type":"sample", "t":1.0,"g":[[1.0],[2.0]],"h":[]}"#, // whitespace
            r#"{"type":"sample","t":1.0,"g":[[1.0],[2.0]],"h":[],"x":1}"#, // unknown field
            r#"{"type":"sample","t":1.0,"g":[[1.0],[2.0]],"h":[]"#, // cut short
            r#"{"type":"sample","t":01.0,"g":[[1.0],[2.0]],"h":[]}"#, // leading zero
            r#"{"type":"sample","t":1.,"g":[[1.0],[2.0]],"h":[]}"#, // no fraction digit
            r#"{"type":"sample","t":1e400,"g":[[1.0],[2.0]],"h":[]}"#, // out of range
            r#"{"type":"event","t":1.0,"kind":"note"}"#,
        ] {
            assert!(parse_one(bad, 2, 1, 0).is_none(), "{bad}");
        }
    }
}
