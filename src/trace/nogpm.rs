//! GPM-stripped twins of recorded traces: what the same run holds when
//! recorded on a GPU without GPM (A100, A10G, L4, L40S, T4) or with
//! `gate record --no-gpm`. Every GPM column (SM active, occupancy, pipes,
//! tensor, DRAM, GPM's PCIe and NVLink) becomes null, the header says GPM
//! is unsupported and lists those columns, and `gpm_invalid` events (which a
//! recorder without GPM never writes) are dropped. NVML's own counters (busy,
//! memory-controller busy, clocks, power, processes) and every host counter
//! are kept as recorded.
//!
//! Test support (feature `testkit`, like `synthetic`): the release library
//! never reads a trace as untyped JSON.
//!
//! `scripts/strip-gpm.sh` writes the twins of `fixtures/traces/*.jsonl`
//! into `fixtures/traces/nogpm/`; a test checks they are current.

use serde_json::Value;

/// The twin of `text` (a whole trace, JSON Lines) without GPM. `source`
/// names the recorded trace in the header's note. Lines other than the
/// header, samples and `gpm_invalid` events are kept byte for byte.
pub fn strip_gpm(text: &str, source: &str) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut gpm_cols: Vec<usize> = Vec::new();
    let mut seen_header = false;
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        if line.trim().is_empty() {
            continue;
        }
        let kind = record_type(line);
        match kind.as_deref() {
            Some("header") => {
                let mut h: Value = parse(line, n)?;
                gpm_cols = strip_header(&mut h, source).map_err(|e| format!("line {n}: {e}"))?;
                seen_header = true;
                out.push_str(&to_line(&h));
            }
            Some("sample") => {
                if !seen_header {
                    return Err(format!("line {n}: a sample before the header"));
                }
                let mut s: Value = parse(line, n)?;
                if let Some(Value::Array(gpus)) = s.get_mut("g") {
                    for row in gpus.iter_mut() {
                        if let Value::Array(vals) = row {
                            for &c in &gpm_cols {
                                if let Some(v) = vals.get_mut(c) {
                                    *v = Value::Null;
                                }
                            }
                        }
                    }
                }
                out.push_str(&to_line(&s));
            }
            Some("event") => {
                let e: Value = parse(line, n)?;
                if e.get("kind").and_then(Value::as_str) == Some("gpm_invalid") {
                    continue;
                }
                out.push_str(line);
            }
            _ => out.push_str(line),
        }
        out.push('\n');
    }
    if !seen_header {
        return Err("no header line".into());
    }
    Ok(out)
}

/// The header of a trace without GPM: returns the GPM columns' positions.
fn strip_header(h: &mut Value, source: &str) -> Result<Vec<usize>, String> {
    let cols: Vec<String> = h
        .get("gpu_columns")
        .and_then(Value::as_array)
        .ok_or("the header has no gpu_columns")?
        .iter()
        .map(|c| c.as_str().unwrap_or_default().to_string())
        .collect();
    let gpm: Vec<usize> = (0..cols.len())
        .filter(|&i| crate::metrics::is_gpm(&cols[i]))
        .collect();
    if let Some(Value::Array(gpus)) = h.pointer_mut("/fingerprint/gpus") {
        for g in gpus.iter_mut() {
            let Value::Object(g) = g else { continue };
            g.insert("gpm_supported".into(), Value::Bool(false));
            // As the recorder lists them on such a GPU: what NVML could not
            // report, then every GPM column.
            let mut unsupported: Vec<Value> = g
                .get("unsupported")
                .and_then(Value::as_array)
                .map(|u| {
                    u.iter()
                        .filter(|c| !c.as_str().is_some_and(crate::metrics::is_gpm))
                        .cloned()
                        .collect()
                })
                .unwrap_or_default();
            unsupported.extend(gpm.iter().map(|&i| Value::String(cols[i].clone())));
            g.insert("unsupported".into(), Value::Array(unsupported));
        }
    }
    let note = match h.get("note").and_then(Value::as_str) {
        Some(n) if !n.is_empty() => format!("{n}; "),
        _ => String::new(),
    };
    h.as_object_mut().ok_or("the header is not an object")?.insert(
        "note".into(),
        Value::String(format!(
            "{note}GPM stripped from {source} by scripts/strip-gpm.sh (what a GPU without GPM records)"
        )),
    );
    Ok(gpm)
}

/// The `"type"` of a record line, read without parsing the whole line when
/// it comes first (as gate writes it).
fn record_type(line: &str) -> Option<String> {
    if let Some(rest) = line.strip_prefix("{\"type\":\"") {
        return rest.split('"').next().map(str::to_string);
    }
    let v: Value = serde_json::from_str(line).ok()?;
    v.get("type").and_then(Value::as_str).map(str::to_string)
}

fn parse(line: &str, n: usize) -> Result<Value, String> {
    serde_json::from_str(line).map_err(|e| format!("line {n}: {e}"))
}

fn to_line(v: &Value) -> String {
    serde_json::to_string(v).expect("a JSON value serialises")
}

#[cfg(test)]
mod tests {
    use super::*;

    const TRACE: &str = concat!(
        r#"{"type":"header","schema_version":1,"gpu_columns":["gpu_busy_pct","sm_active_pct","mem_busy_pct","pcie_rx_mib_s"],"fingerprint":{"gpus":[{"index":0,"gpm_supported":true,"unsupported":["nvlink_rx_mib_s","temperature_c"]}]},"note":"recorded"}"#,
        "\n",
        r#"{"type":"sample","t":100.0,"w":false,"g":[[97.0,91.5,40.0,18.2]],"h":[99.0]}"#,
        "\n",
        r#"{"type":"event","t":150.0,"kind":"gpm_invalid","gpu":0}"#,
        "\n",
        r#"{"type":"output","t":160.0,"line":"samples_per_s: 1.0"}"#,
        "\n",
    );

    #[test]
    fn gpm_columns_become_null_and_the_header_says_so() {
        let out = strip_gpm(TRACE, "x.jsonl").unwrap();
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 3, "{out}");
        let h: Value = serde_json::from_str(lines[0]).unwrap();
        assert_eq!(h["fingerprint"]["gpus"][0]["gpm_supported"], false);
        assert_eq!(
            h["fingerprint"]["gpus"][0]["unsupported"],
            serde_json::json!(["temperature_c", "sm_active_pct", "pcie_rx_mib_s"])
        );
        assert!(h["note"]
            .as_str()
            .unwrap()
            .starts_with("recorded; GPM stripped from x.jsonl"));
        // NVML's busy and memory-controller busy stay; GPM's SM and PCIe go.
        assert_eq!(
            lines[1],
            r#"{"type":"sample","t":100.0,"w":false,"g":[[97.0,null,40.0,null]],"h":[99.0]}"#
        );
        assert_eq!(
            lines[2],
            r#"{"type":"output","t":160.0,"line":"samples_per_s: 1.0"}"#
        );
    }

    #[test]
    fn stripping_twice_changes_nothing_more_than_the_note() {
        let once = strip_gpm(TRACE, "x").unwrap();
        let twice = strip_gpm(&once, "x").unwrap();
        assert_eq!(
            once.lines().skip(1).collect::<Vec<_>>(),
            twice.lines().skip(1).collect::<Vec<_>>()
        );
    }

    #[test]
    fn a_trace_without_header_is_refused() {
        let e = strip_gpm(r#"{"type":"sample","t":1.0,"g":[]}"#, "x").unwrap_err();
        assert!(e.contains("line 1"), "{e}");
    }
}
