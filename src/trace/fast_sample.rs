//! Fast path for the one record a trace is made of: a `sample` line parsed
//! straight into the loaded trace's flat f32 columns, with no intermediate
//! `Vec<Vec<Option<f64>>>` per line (that allocation and the generic serde
//! machinery were most of `gate check`'s time on long traces).
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

/// Where one sample line's values go.
pub(super) struct Columns<'a> {
    pub times_ms: &'a mut Vec<f64>,
    pub warmup: &'a mut Vec<bool>,
    pub gpu_values: &'a mut Vec<f32>,
    pub host_values: &'a mut Vec<f32>,
    pub ngpu: usize,
    pub ncols: usize,
    pub nhost: usize,
}

const PREFIX: &[u8] = b"{\"type\":\"sample\",\"t\":";

/// Parse `line` (without its newline) into `cols`. Returns false, leaving
/// `cols` untouched, when the line is not in the exact writer shape.
pub(super) fn parse_into(line: &[u8], cols: &mut Columns) -> bool {
    if !line.starts_with(PREFIX) {
        return false;
    }
    let lens = (
        cols.times_ms.len(),
        cols.warmup.len(),
        cols.gpu_values.len(),
        cols.host_values.len(),
    );
    if parse_body(&line[PREFIX.len()..], cols).is_some() {
        return true;
    }
    // Roll back whatever a half-parsed line appended.
    cols.times_ms.truncate(lens.0);
    cols.warmup.truncate(lens.1);
    cols.gpu_values.truncate(lens.2);
    cols.host_values.truncate(lens.3);
    false
}

fn parse_body(s: &[u8], cols: &mut Columns) -> Option<()> {
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
    for g in 0..cols.ngpu {
        if g > 0 {
            p.expect(b",")?;
        }
        p.expect(b"[")?;
        p.values(cols.ncols, cols.gpu_values)?;
        p.expect(b"]")?;
    }
    p.expect(b"],\"h\":[")?;
    p.values(cols.nhost, cols.host_values)?;
    p.expect(b"]}")?;
    if p.i != s.len() {
        return None;
    }
    cols.times_ms.push(t);
    cols.warmup.push(w);
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
        while let Some(&c @ b'0'..=b'9') = s.get(i) {
            significand = significand
                .checked_mul(10)?
                .checked_add((c - b'0') as u64)?;
            i += 1;
        }
        let mut exponent: i32 = 0;
        if s.get(i) == Some(&b'.') {
            i += 1;
            let start = i;
            while let Some(&c @ b'0'..=b'9') = s.get(i) {
                significand = significand
                    .checked_mul(10)?
                    .checked_add((c - b'0') as u64)?;
                exponent -= 1;
                i += 1;
            }
            if i == start {
                return None;
            }
        }
        if matches!(s.get(i), Some(b'e' | b'E')) {
            i += 1;
            let negative_exp = match s.get(i) {
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
            exponent = if negative_exp {
                exponent.checked_sub(e)?
            } else {
                exponent.checked_add(e)?
            };
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

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_one(
        text: &str,
        ngpu: usize,
        ncols: usize,
        nhost: usize,
    ) -> Option<(f64, bool, Vec<f32>, Vec<f32>)> {
        let (mut t, mut w, mut g, mut h) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let mut cols = Columns {
            times_ms: &mut t,
            warmup: &mut w,
            gpu_values: &mut g,
            host_values: &mut h,
            ngpu,
            ncols,
            nhost,
        };
        if !parse_into(text.as_bytes(), &mut cols) {
            assert!(t.is_empty() && w.is_empty() && g.is_empty() && h.is_empty());
            return None;
        }
        Some((t[0], w[0], g, h))
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
