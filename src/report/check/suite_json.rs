//! The suite's JSON document (`gate check --suite --json`): an envelope of
//! typed fields around each workload's check report. Its schema,
//! `schemas/suite-report.schema.json`, is generated from these types
//! (schemars, through the `testkit` feature: never in the release binary)
//! by [`schema`], and a test fails when the file and the types disagree.

use serde::Serialize;

/// Version of the suite JSON document.
pub(crate) const SUITE_SCHEMA_VERSION: u32 = 1;

/// Where the published schema lives, relative to the repository.
pub const SCHEMA_PATH: &str = "schemas/suite-report.schema.json";

/// The whole document.
#[derive(Serialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "testkit", derive(schemars::JsonSchema))]
#[cfg_attr(
    feature = "testkit",
    schemars(
        title = "gate check --suite report",
        description = "What `gate check --suite FILE --format json` prints and `--json FILE` writes, suite_schema_version 1: the suite's verdict and each workload's check report (valid against schemas/check-report.schema.json) or the error that kept it from being judged. Generated from src/report/check/suite_json.rs; validated against real output by tests/json_schema.rs."
    )
)]
pub struct SuiteDocument {
    /// Version of this envelope; a removal or change of meaning bumps it.
    pub suite_schema_version: u32,
    /// The gate that wrote it.
    pub gate_version: String,
    /// The worst workload's verdict, lower case.
    pub verdict: SuiteVerdict,
    /// gate's exit code for the suite: the worst of its workloads'.
    pub exit_code: i32,
    /// Every workload, in the suite file's order.
    pub workloads: Vec<SuiteWorkload>,
}

/// The suite's verdict word (src/report/check/suite.rs `verdict_word`).
#[derive(Serialize, Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "testkit", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum SuiteVerdict {
    Pass,
    Regression,
    #[serde(rename = "usage error")]
    UsageError,
    Inconclusive,
    #[serde(rename = "benchmark failed")]
    BenchmarkFailed,
    Error,
}

impl SuiteVerdict {
    /// The word, lower case, as serialized.
    pub fn as_str(self) -> &'static str {
        match self {
            SuiteVerdict::Pass => "pass",
            SuiteVerdict::Regression => "regression",
            SuiteVerdict::UsageError => "usage error",
            SuiteVerdict::Inconclusive => "inconclusive",
            SuiteVerdict::BenchmarkFailed => "benchmark failed",
            SuiteVerdict::Error => "error",
        }
    }
}

/// One workload: judged (`report`) or not (`error`), never both.
#[derive(Serialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "testkit", derive(schemars::JsonSchema))]
pub struct SuiteWorkload {
    /// The workload's name in the suite file.
    pub name: String,
    /// The baseline it is judged against.
    pub baseline: String,
    /// gate's exit code for this workload alone.
    pub exit_code: i32,
    /// The check's verdict (`pass`, `regression`, ...), or `usage error` /
    /// `error` when it could not be judged.
    pub verdict: String,
    /// The check report, as `gate check --format json` writes it.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "testkit", schemars(schema_with = "check_report_schema"))]
    pub report: Option<serde_json::Value>,
    /// Why the workload could not be judged.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// `report`: a check report, its schema embedded under `$defs` by
/// [`schema`] (one file that validators read without a network).
#[cfg(feature = "testkit")]
fn check_report_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({ "$ref": "#/$defs/check_report" })
}

/// The suite document's JSON Schema (draft 2020-12): generated from the
/// types above, with `check_report` (the text of
/// schemas/check-report.schema.json) embedded under `$defs`.
#[cfg(feature = "testkit")]
pub fn schema(check_report_schema: serde_json::Value) -> serde_json::Value {
    let mut s = serde_json::to_value(schemars::schema_for!(SuiteDocument))
        .expect("a schema always serializes");
    s["$id"] = "https://gpugate.invalid/schemas/suite-report/1.json".into();
    // Each workload is judged or failed: exactly one of report and error
    // (schemars takes a field with `schema_with` as required).
    let workload = &mut s["$defs"]["SuiteWorkload"];
    if let Some(required) = workload["required"].as_array_mut() {
        required.retain(|f| f != "report");
    }
    workload["oneOf"] = serde_json::json!([
        { "required": ["report"] },
        { "required": ["error"] }
    ]);
    s["$defs"]["check_report"] = check_report_schema;
    s
}
