//! JUnit XML for GitLab/Jenkins/GitHub test reports, valid against the
//! Jenkins xunit schema (`shared/schemas/junit-10.xsd`).
//!
//! Written by hand rather than with `junit-report`: that crate (0.9.1)
//! writes control characters raw, which makes the file ill-formed XML as
//! soon as a benchmark's command line or output holds an escape sequence,
//! and a CI report that fails to parse hides the very failure it should
//! show. Here every text and attribute goes through `escape::xml_text` /
//! `escape::xml_attr`, which also replace characters XML 1.0 cannot carry
//! at all by a visible `\u{..}`, so nothing silently disappears.
//!
//! Layout: one `testsuite` named `gate.<baseline>`; one testcase per gated
//! metric (classname `gate.<baseline>`, `gate.<baseline>.gpu<N>`,
//! `gate.<baseline>.node<M>[.gpu<N>]`; name = the metric id, so
//! classname+name is unique), and one testcase `run verdict` for the run
//! (crash, environment, too few samples, the overall regression).

use super::{capped, failure_text, Reporter};
use crate::escape;
use crate::gate::{CheckReport, MetricResult, RunVerdict, Verdict};
use crate::limits::{MAX_MESSAGE_BYTES, MAX_RUN_TEXT_BYTES};

pub(crate) struct Junit;

fn classname(report: &CheckReport, m: &MetricResult) -> String {
    let mut s = format!("gate.{}", report.baseline.name);
    if let Some(n) = m.node {
        s.push_str(&format!(".node{n}"));
    }
    if let Some(g) = m.gpu {
        s.push_str(&format!(".gpu{g}"));
    }
    s
}

/// Seconds for `time` attributes (SUREFIRE_TIME: plain decimal).
fn seconds(v: Option<f64>) -> String {
    let v = v.filter(|v| v.is_finite() && *v > 0.0).unwrap_or(0.0);
    // An empty f64 sum is -0.0, which SUREFIRE_TIME's pattern rejects.
    format!("{:.3}", v.abs())
}

/// What the suite header counts.
#[derive(Default)]
struct Tally {
    failures: usize,
    errors: usize,
    skipped: usize,
}

/// `<failure>` / `<error>` / `<skipped>` with a one-line message and a full
/// text body (GitLab shows the body).
fn outcome(kind: &str, kind_type: &str, message: &str, body: &str) -> String {
    format!(
        "      <{kind} type=\"{}\" message=\"{}\">{}</{kind}>\n",
        escape::xml_attr(kind_type),
        escape::xml_attr(&capped(message, MAX_MESSAGE_BYTES)),
        escape::xml_text(body)
    )
}

/// The `run verdict` testcase: the run-level reasons and diagnosis as its
/// failure or error, what was run in its system-out.
fn run_case(r: &CheckReport, suite: &str, run_time: f64, tally: &mut Tally) -> String {
    let mut case = format!(
        "    <testcase classname=\"{}\" name=\"run verdict\" time=\"{}\">\n",
        escape::xml_attr(suite),
        seconds(Some(run_time))
    );
    let mut body = r.reasons().join("\n");
    if !r.diagnosis_text.is_empty() {
        body.push_str("\nDiagnosis:\n");
        for d in &r.diagnosis_text {
            body.push_str(&format!("- {d}\n"));
        }
    }
    let body = capped(&body, MAX_RUN_TEXT_BYTES).into_owned();
    let message = format!(
        "{}: {}",
        r.verdict().as_str(),
        r.reasons().first().map(String::as_str).unwrap_or("")
    );
    // One regression is one failure: when a metric's testcase carries it,
    // this testcase passes and tells the run's reasons in its system-out.
    let metric_failed = r
        .metrics
        .iter()
        .any(|m| m.gated && m.fails(r.fail_on_improvement));
    let mut out_text = String::new();
    match r.verdict() {
        RunVerdict::Pass => {}
        // Exit 0: a passing testcase that says loudly what was accepted
        // (and the suite's `gate.accepted` property), never an error.
        RunVerdict::Accepted => out_text.push_str(&format!("{body}\n")),
        RunVerdict::Regression if metric_failed => out_text.push_str(&format!("{body}\n")),
        // gate.toml maps inconclusive to green: shown, not failed.
        RunVerdict::Inconclusive if r.exit_code() == 0 => {
            tally.skipped += 1;
            case.push_str(&outcome("skipped", "inconclusive", &message, &body));
        }
        RunVerdict::Regression => {
            tally.failures += 1;
            case.push_str(&outcome("failure", "regression", &message, &body));
        }
        v => {
            tally.errors += 1;
            case.push_str(&outcome("error", v.as_str(), &message, &body));
        }
    }
    for run in &r.runs {
        out_text.push_str(&format!(
            "{}{} ({}): {} steady samples, wall {} s, exit {}\n",
            run.node.map(|n| format!("node{n} ")).unwrap_or_default(),
            run.source,
            if run.command.is_empty() {
                "attached"
            } else {
                &run.command
            },
            run.steady_samples,
            crate::format::number_or_na(run.wall_time_s),
            run.exit_code.map(|c| c.to_string()).unwrap_or("n/a".into())
        ));
    }
    for w in r.warnings() {
        out_text.push_str(&format!("warning: {w}\n"));
    }
    // The context metrics that moved (issue 30.2): the evidence behind the
    // diagnosis, a counter at 0 in the baseline included.
    for m in r.metrics.iter().filter(|m| !m.gated && super::shown(m)) {
        out_text.push_str(&format!(
            "context moved: {} ({}): {} -> {}, change {}\n",
            m.shown_name(),
            m.statistic.as_str(),
            crate::format::value_with_unit(m.baseline, &m.unit),
            crate::format::value_with_unit(m.new, &m.unit),
            super::change_text(m)
        ));
    }
    case.push_str(&format!(
        "      <system-out>{}</system-out>\n    </testcase>\n",
        escape::xml_text(&capped(&out_text, MAX_RUN_TEXT_BYTES))
    ));
    case
}

/// One gated metric's testcase: failed (regression, or improvement with
/// --fail-on-improvement), error (not measured), skipped (inconclusive) or
/// passed with its numbers in system-out.
fn metric_case(r: &CheckReport, m: &MetricResult, tally: &mut Tally) -> String {
    let mut case = format!(
        "    <testcase classname=\"{}\" name=\"{}\" time=\"0\">\n",
        escape::xml_attr(&classname(r, m)),
        escape::xml_attr(&m.shown_id())
    );
    let short = format!(
        "{} {}: {} -> {} ({})",
        m.shown_id(),
        m.statistic.as_str(),
        crate::format::value_with_unit(m.baseline, &m.unit),
        crate::format::value_with_unit(m.new, &m.unit),
        m.verdict.as_str()
    );
    match m.verdict {
        // In a disturbed run the move is no evidence about the change: an
        // error (retry), not a test failure.
        Verdict::Regression if r.verdict() == RunVerdict::Disturbed => {
            tally.errors += 1;
            case.push_str(&outcome("error", "disturbed", &short, &failure_text(r, m)));
        }
        Verdict::Regression => {
            tally.failures += 1;
            case.push_str(&outcome(
                "failure",
                "regression",
                &short,
                &failure_text(r, m),
            ));
        }
        Verdict::Improvement if r.fail_on_improvement => {
            tally.failures += 1;
            case.push_str(&outcome(
                "failure",
                "improvement",
                &short,
                &failure_text(r, m),
            ));
        }
        Verdict::Missing if m.new.is_none() => {
            tally.errors += 1;
            case.push_str(&outcome(
                "error",
                "missing",
                &short,
                &super::words::metric_reason(m),
            ));
        }
        // GitLab shows a skipped test's text, not its message: both say why.
        Verdict::Missing | Verdict::Inconclusive => {
            tally.skipped += 1;
            let why = format!("{short}. {}", super::words::metric_reason(m));
            let body = capped(&why, crate::limits::MAX_CASE_TEXT_BYTES);
            case.push_str(&outcome("skipped", m.verdict.as_str(), &why, &body));
        }
        _ => {
            case.push_str(&format!(
                "      <system-out>{}</system-out>\n",
                escape::xml_text(&format!("{short}. {}", super::words::metric_reason(m)))
            ));
        }
    }
    case.push_str("    </testcase>\n");
    case
}

/// Suite properties: gate's version and verdict, the baseline's provenance
/// and the command that was judged.
fn properties(r: &CheckReport) -> String {
    let mut props = vec![
        ("gate.version", r.gate_version.clone()),
        ("gate.verdict", r.verdict().as_str().to_string()),
        ("gate.exit_code", r.exit_code().to_string()),
        ("baseline.name", r.baseline.name.clone()),
        ("baseline.source", r.baseline.source.clone()),
        ("baseline.created", r.baseline.created.clone()),
    ];
    if let Some(c) = &r.baseline.commit {
        props.push(("baseline.commit", c.clone()));
    }
    if let Some(run) = r.runs.first() {
        props.push(("run.command", run.command.clone()));
    }
    // What was accepted and by whom: CI widgets show properties next to
    // the (passing) testcases.
    let accepted: Vec<String> = r
        .metrics
        .iter()
        .filter_map(|m| {
            let a = m.accepted.as_ref()?;
            Some(format!("{} ({}: {})", m.shown_name(), a.by, a.reason))
        })
        .collect();
    if !accepted.is_empty() {
        props.push((
            "gate.accepted",
            capped(&accepted.join("; "), MAX_MESSAGE_BYTES).into_owned(),
        ));
    }
    // What acted on the run from outside its tree, and what the baseline
    // cannot see (issue 38): beside the testcases, whatever the verdict.
    if !r.disturbance.is_empty() {
        let what: Vec<String> = r.disturbance.iter().map(|d| d.text()).collect();
        props.push((
            "gate.disturbance",
            capped(&what.join(" | "), MAX_MESSAGE_BYTES).into_owned(),
        ));
    }
    if let Some(s) = crate::gate::detectable::statement(&r.metrics) {
        props.push((
            "gate.detectable",
            capped(&s, MAX_MESSAGE_BYTES).into_owned(),
        ));
    }
    let mut xml = String::from("    <properties>\n");
    for (k, v) in props {
        xml.push_str(&format!(
            "      <property name=\"{}\" value=\"{}\"/>\n",
            escape::xml_attr(k),
            escape::xml_attr(&v)
        ));
    }
    xml.push_str("    </properties>\n");
    xml
}

impl Reporter for Junit {
    fn render(&self, r: &CheckReport) -> String {
        let suite = format!("gate.{}", r.baseline.name);
        // The whole runs, start-up included: what the CI job spent on them.
        let run_time: f64 = r
            .runs
            .iter()
            .filter_map(|x| {
                x.wall_time_s
                    .map(|w| w + x.startup_s.unwrap_or(0.0) + x.teardown_s.unwrap_or(0.0))
            })
            .sum();
        let mut tally = Tally::default();
        let mut cases = vec![run_case(r, &suite, run_time, &mut tally)];
        for m in r.metrics.iter().filter(|m| m.gated) {
            cases.push(metric_case(r, m, &mut tally));
        }
        let Tally {
            failures,
            errors,
            skipped,
        } = tally;
        let mut xml = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
        xml.push_str(&format!(
            "<testsuites name=\"gate\" tests=\"{}\" failures=\"{failures}\" errors=\"{errors}\" time=\"{}\">\n",
            cases.len(),
            seconds(Some(run_time))
        ));
        xml.push_str(&format!(
            "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{failures}\" errors=\"{errors}\" skipped=\"{skipped}\" time=\"{}\">\n",
            escape::xml_attr(&suite),
            cases.len(),
            seconds(Some(run_time))
        ));
        xml.push_str(&properties(r));
        for c in cases {
            xml.push_str(&c);
        }
        xml.push_str("  </testsuite>\n</testsuites>\n");
        xml
    }
}

/// A report for a check that could not run at all (bad baseline or
/// gate.toml, unreadable trace, no GPU): one `run verdict` testcase with an
/// `error`, so CI shows the cause instead of a missing report.
pub(crate) fn render_error(baseline: &str, kind: &str, message: &str) -> String {
    let suite = format!("gate.{baseline}");
    let first = message.lines().next().unwrap_or("");
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
<testsuites name=\"gate\" tests=\"1\" failures=\"0\" errors=\"1\" time=\"0\">\n\
  <testsuite name=\"{s}\" tests=\"1\" failures=\"0\" errors=\"1\" skipped=\"0\" time=\"0\">\n\
    <testcase classname=\"{s}\" name=\"run verdict\" time=\"0\">\n\
      <error type=\"{k}\" message=\"{m}\">{t}</error>\n\
    </testcase>\n\
  </testsuite>\n\
</testsuites>\n",
        s = escape::xml_attr(&suite),
        k = escape::xml_attr(kind),
        m = escape::xml_attr(first),
        t = escape::xml_text(message)
    )
}

/// Several documents of this module (a suite's workloads) as one: their
/// `<testsuite>` elements inside one `<testsuites>` whose counts and time
/// are the sums.
pub fn combine(docs: &[String]) -> String {
    let attr = |line: &str, key: &str| -> f64 {
        line.split(&format!(" {key}=\""))
            .nth(1)
            .and_then(|rest| rest.split('"').next())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0.0)
    };
    let (mut tests, mut failures, mut errors, mut time) = (0.0, 0.0, 0.0, 0.0);
    let mut body = String::new();
    for doc in docs {
        let mut inside = false;
        for line in doc.lines() {
            if line.starts_with("<testsuites ") {
                tests += attr(line, "tests");
                failures += attr(line, "failures");
                errors += attr(line, "errors");
                time += attr(line, "time");
                inside = true;
            } else if line == "</testsuites>" {
                inside = false;
            } else if inside {
                body.push_str(line);
                body.push('\n');
            }
        }
    }
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"gate\" tests=\"{}\" failures=\"{}\" errors=\"{}\" time=\"{}\">\n{body}</testsuites>\n",
        tests as u64,
        failures as u64,
        errors as u64,
        seconds(Some(time))
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn combined_documents_keep_every_testsuite_and_sum_the_counts() {
        let r = crate::report::check::tests_support::sample_report();
        let one = Junit.render(&r);
        let err = render_error("other", "usage", "baseline 'other' not found");
        let both = combine(&[one.clone(), err]);
        assert_eq!(both.matches("<testsuite ").count(), 2, "{both}");
        assert_eq!(both.matches("<testsuites ").count(), 1);
        let head = both.lines().nth(1).unwrap();
        assert!(
            // One failure per failed metric; the run's regression is no
            // second one.
            head.contains("tests=\"6\" failures=\"3\" errors=\"1\" time=\"65.000\""),
            "{head}"
        );
        assert!(both.ends_with("</testsuites>\n"));
    }

    #[test]
    fn one_testcase_per_gated_metric_plus_the_run_with_unique_names() {
        let r = crate::report::check::tests_support::sample_report();
        let xml = Junit.render(&r);
        let cases: Vec<&str> = xml
            .lines()
            .filter(|l| l.trim_start().starts_with("<testcase"))
            .collect();
        let gated = r.metrics.iter().filter(|m| m.gated).count();
        assert_eq!(cases.len(), gated + 1);
        let mut keys: Vec<&str> = cases.clone();
        keys.sort();
        keys.dedup();
        assert_eq!(keys.len(), cases.len(), "classname+name unique");
        assert!(xml.contains("classname=\"gate.demo.gpu1\" name=\"sm_active_pct\""));
        assert!(xml.contains("<failure type=\"regression\""));
        assert!(xml.contains("Diagnosis:"), "diagnosis in failure text");
    }

    /// GitLab shows a skipped test's text: every `<skipped>` has a message
    /// and a text, and the suite counts each.
    #[test]
    fn skipped_cases_say_why_in_their_text() {
        let mut r = crate::report::check::tests_support::sample_report();
        r.set_verdict_for_test(
            RunVerdict::Inconclusive,
            0,
            vec!["sm_active_pct moved inside the noise".into()],
        );
        for m in r.metrics.iter_mut().filter(|m| m.gated) {
            m.verdict = Verdict::Inconclusive;
            m.why = crate::gate::Why::WithinNoise;
        }
        let xml = Junit.render(&r);
        let skipped: Vec<&str> = xml
            .split("<skipped ")
            .skip(1)
            .map(|rest| {
                &rest[..rest
                    .find("</skipped>")
                    .expect("a skipped element with text")]
            })
            .collect();
        let gated = r.metrics.iter().filter(|m| m.gated).count();
        assert_eq!(skipped.len(), gated + 1, "{xml}");
        for e in &skipped {
            let (attrs, text) = e.split_once('>').unwrap();
            assert!(attrs.contains("message=\""), "{e}");
            assert!(text.trim().len() > 10, "a reason in the text: {e}");
        }
        assert!(xml.contains("<skipped type=\"inconclusive\" message=\"inconclusive: sm_active_pct moved inside the noise\">"), "{xml}");
        assert!(xml.contains(&format!("skipped=\"{}\"", gated + 1)), "{xml}");
    }
}
