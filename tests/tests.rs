//! Every integration test, in one test binary (`cargo test --test
//! integration`): one link of the library instead of one per file, and
//! the tests of all files share one pool of threads. Each file is a module;
//! run one file's tests with a filter, e.g.
//! `cargo test --test integration scoreboard::`.

mod common;

mod ab_cli;
mod accept;
mod alerts;
mod architecture;
mod bad_inputs;
mod capture_check;
mod check_html;
mod color;
mod command_strings;
mod committed_data;
mod comparable;
mod consumers;
mod diagnosis_prose;
mod disturbed;
mod docs_facts;
mod evidence_exists;
mod exit_codes;
mod first_hour;
mod fixtures_acceptance;
mod fixtures_diagnosis;
mod framework_detect;
mod fuzz_parsers;
mod guard_rails;
mod history;
mod history_postgres;
mod host_roles;
mod hostile_strings;
mod install_script;
mod json_schema;
mod judgement;
mod limits;
mod metric_sources;
mod no_silent_pass;
mod nogpm_cli;
mod orphans;
mod outputs;
mod pages;
mod pooled;
mod pr_comment;
mod record_cli;
mod release_consistency;
mod reliability4;
mod reliability5;
mod report_cli;
mod scoreboard;
mod screenshots;
mod spans;
mod stdout_is_data;
mod suite;
mod templates;
mod threads;
mod trend;
mod verdict_statistics;
mod watch_cli;
mod what_users_see;
mod window;
