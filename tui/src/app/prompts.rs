//! The prompts behind `t`, `f`, `r` and `R`: numbered choices, a text field
//! for a custom value, and the stages that lead from a key to a command.

use std::time::Duration;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::App;
use crate::backend::{Command, FailClass, MigrationPreview, Report, Resolution, ResponseTarget};
use crate::view::PauseTarget;

/// One line of a picker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Choice {
    pub label: String,
    pub hint: String,
}

impl Choice {
    fn new(label: impl Into<String>, hint: impl Into<String>) -> Choice {
        Choice {
            label: label.into(),
            hint: hint.into(),
        }
    }
}

/// What a prompt is collecting; a completed stage either yields a command or
/// opens the next stage.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stage {
    Advance,
    FailCode,
    FailClass {
        code: String,
    },
    RetryAfter {
        code: String,
        class: FailClass,
    },
    RespondTarget,
    RespondBody {
        target: ResponseTarget,
    },
    Resolve,
    /// Migration: onto which deployment or model file; of the open
    /// instance, or (`failed_of`) of every FAILED instance of a deployment.
    MigrateTarget {
        failed_of: Option<i64>,
    },
    /// Migration: the plan, to apply, edit (mapping, budget) or cancel.
    MigrateConfirm(Box<MigrationPreview>),
    /// Which class or dependency to pause or unpause: every one on the
    /// fleet, the instance's own on an instance.
    Pause {
        targets: Vec<PauseTarget>,
    },
    /// Quarantine (or release) one instance: confirm or cancel.
    Quarantine {
        instance: String,
        quarantine: bool,
    },
}

/// A small modal: a list of choices, the last of which may open a text field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prompt {
    pub stage: Stage,
    pub title: String,
    pub choices: Vec<Choice>,
    pub selected: usize,
    /// The last choice asks for text instead of being a value.
    pub custom: bool,
    /// `Some` while typing.
    pub input: Option<String>,
    pub input_label: String,
    /// Why the typed text was refused.
    pub error: Option<String>,
    /// Lines shown above the choices (a migration's plan).
    pub notes: Vec<String>,
}

const TIME_CHOICES: [(&str, i64); 4] = [
    ("30s", 30_000),
    ("5m", 300_000),
    ("1h", 3_600_000),
    ("1d", 86_400_000),
];

const COMMON_CODES: [&str; 3] = ["PROVIDER_DOWN", "INVALID_INPUT", "RATE_LIMITED"];

impl App {
    pub(super) fn open(&mut self, stage: Stage) {
        let mut notes = Vec::new();
        let mut preselect = None;
        let (title, choices, custom, input_label): (String, Vec<Choice>, bool, &str) = match &stage
        {
            Stage::MigrateTarget { failed_of } => {
                let current =
                    failed_of.or_else(|| self.view.as_ref().map(|v| v.inspection.deployment_id));
                // The engine's suggestion: the newest active deployment of
                // the same process (`repair::likely_target_among`).
                let suggested = self
                    .deployments
                    .iter()
                    .find(|d| Some(d.id) == current)
                    .and_then(|d| d.repair_onto);
                let offered: Vec<_> = self
                    .deployments
                    .iter()
                    .filter(|d| Some(d.id) != current && !d.retired)
                    .collect();
                preselect = offered.iter().position(|d| Some(d.id) == suggested);
                let choices = offered
                    .iter()
                    .map(|d| {
                        let mut hint = format!(
                            "{} · {} · {}",
                            d.process,
                            d.model.as_deref().unwrap_or("(by a run)"),
                            d.hash
                        );
                        if Some(d.id) == suggested {
                            hint.push_str(" · suggested: the newest of its process");
                        }
                        Choice::new(format!("deployment {}", d.id), hint)
                    })
                    .chain([Choice::new("model file…", "deployed by the migration")])
                    .collect();
                let title = match failed_of {
                    Some(d) => format!("Repair every FAILED instance of deployment {d} onto"),
                    None => "Migrate onto".into(),
                };
                (title, choices, true, "model file (path)")
            }
            Stage::MigrateConfirm(p) => {
                notes = p.lines.clone();
                let mapping = if p.mapping.is_empty() {
                    "none (nodes keep their ids)".to_string()
                } else {
                    p.mapping
                        .iter()
                        .map(|(a, b)| format!("{a}={b}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                };
                notes.push(format!("mapping: {mapping}"));
                let mut choices = Vec::new();
                if p.ok {
                    choices.push(Choice::new(
                        "apply",
                        if p.failed_of.is_some() {
                            "each instance in its own transaction, only if it has not moved"
                        } else {
                            "one transaction; the result is on screen"
                        },
                    ));
                }
                choices.push(Choice::new(
                    if p.reset_budget {
                        "keep the burned budget"
                    } else {
                        "reset the budget"
                    },
                    "plan again",
                ));
                choices.push(Choice::new("cancel", "nothing is changed"));
                choices.push(Choice::new("edit the mapping…", "OLD=NEW, OLD=NEW"));
                (
                    format!(
                        "{} the {} of {} onto {}",
                        if p.ok { "Apply" } else { "Refused:" },
                        if p.failed_of.is_some() {
                            "repair"
                        } else {
                            "migration"
                        },
                        p.instance,
                        if p.target.parse::<i64>().is_ok() {
                            format!("deployment {}", p.target)
                        } else {
                            p.target.clone()
                        }
                    ),
                    choices,
                    true,
                    "mapping (OLD=NEW, comma-separated)",
                )
            }
            Stage::Advance => (
                "Advance virtual time by".into(),
                TIME_CHOICES
                    .iter()
                    .map(|(l, _)| Choice::new(*l, ""))
                    .chain([Choice::new("custom…", "90s, 2h30m, 1d or ISO-8601 (PT90S)")])
                    .collect(),
                true,
                "duration (90s, 2h30m, 1d or PT90S)",
            ),
            Stage::FailCode => {
                let mut codes: Vec<String> = self.codes.clone();
                for c in COMMON_CODES {
                    if !codes.iter().any(|x| x == c) {
                        codes.push(c.to_string());
                    }
                }
                (
                    "Fail the next attempt with code".into(),
                    codes
                        .into_iter()
                        .map(|c| Choice::new(c, ""))
                        .chain([Choice::new("custom…", "type a code")])
                        .collect(),
                    true,
                    "failure code",
                )
            }
            Stage::FailClass { code } => (
                format!("Classify {code} as"),
                FailClass::ALL
                    .iter()
                    .map(|c| Choice::new(c.as_str(), c.meaning()))
                    .collect(),
                false,
                "",
            ),
            Stage::RetryAfter { code, class } => (
                match class {
                    FailClass::Deferred => format!("{code}: deferred, run again after"),
                    _ => format!("{code}: the provider says retry after"),
                },
                TIME_CHOICES
                    .iter()
                    .take(3)
                    .map(|(l, _)| {
                        Choice::new(
                            *l,
                            match class {
                                FailClass::Deferred => "same attempt, no budget burned",
                                _ => "capped by maxDelay",
                            },
                        )
                    })
                    .chain([Choice::new("custom…", "10m, 1h30m or ISO-8601 (PT10M)")])
                    .collect(),
                true,
                "duration (10m or PT10M)",
            ),
            Stage::RespondTarget => {
                let mut choices = vec![Choice::new(
                    "the live attempt",
                    "resumes the flow if it is waiting",
                )];
                for n in self.superseded_attempts() {
                    choices.push(Choice::new(
                        format!("superseded attempt {n}"),
                        "expect the honest refusal",
                    ));
                }
                ("Deliver a response to".into(), choices, false, "")
            }
            Stage::RespondBody { .. } => ("Response body".into(), Vec::new(), true, "JSON body"),
            Stage::Quarantine {
                instance,
                quarantine,
            } => {
                let choices = if *quarantine {
                    vec![
                        Choice::new(
                            format!("quarantine {instance}"),
                            "nothing decides for it until released; its state is kept",
                        ),
                        Choice::new("cancel", "nothing is changed"),
                    ]
                } else {
                    vec![
                        Choice::new(
                            format!("release {instance}"),
                            "it runs again; what fell due meanwhile is due at once",
                        ),
                        Choice::new("cancel", "nothing is changed"),
                    ]
                };
                (
                    format!(
                        "{} {instance}?",
                        if *quarantine { "Quarantine" } else { "Release" }
                    ),
                    choices,
                    false,
                    "",
                )
            }
            Stage::Pause { targets } => (
                "Pause or unpause the retries of".into(),
                targets
                    .iter()
                    .map(|t| {
                        Choice::new(
                            format!(
                                "{} {} {}",
                                if t.paused { "unpause" } else { "pause" },
                                t.kind,
                                t.value
                            ),
                            t.hint.clone(),
                        )
                    })
                    .collect(),
                false,
                "",
            ),
            Stage::Resolve => (
                "Resolve the reconciliation as".into(),
                Resolution::ALL
                    .iter()
                    .map(|r| Choice::new(r.as_str(), r.meaning()))
                    .collect(),
                false,
                "",
            ),
        };
        let input = match &stage {
            Stage::RespondBody { .. } => Some("{}".to_string()),
            _ => None,
        };
        self.prompt = Some(Prompt {
            stage,
            title,
            choices,
            selected: preselect.unwrap_or(0),
            custom,
            input,
            input_label: input_label.to_string(),
            error: None,
            notes,
        });
    }

    /// Attempts of the schedule's node before the latest one.
    fn superseded_attempts(&self) -> Vec<u32> {
        let Some(s) = self.view.as_ref().and_then(|v| v.schedule()) else {
            return Vec::new();
        };
        let last = s.done.iter().map(|a| a.n).max().unwrap_or(0);
        s.done.iter().map(|a| a.n).filter(|n| *n < last).collect()
    }

    pub(super) fn prompt_key(&mut self, key: KeyEvent) -> Option<Command> {
        let ctrl_c =
            key.modifiers.contains(KeyModifiers::CONTROL) && key.code == KeyCode::Char('c');
        if ctrl_c {
            self.quit = true;
            return None;
        }
        let p = self.prompt.as_mut()?;
        if let Some(text) = p.input.as_mut() {
            match key.code {
                KeyCode::Esc => {
                    if p.choices.is_empty() {
                        self.prompt = None;
                    } else {
                        p.input = None;
                        p.error = None;
                    }
                }
                KeyCode::Backspace => {
                    text.pop();
                }
                KeyCode::Enter => {
                    let text = text.trim().to_string();
                    return self.complete(Value::Text(text));
                }
                KeyCode::Char(c) => text.push(c),
                _ => {}
            }
            return None;
        }
        let n = p.choices.len();
        match key.code {
            KeyCode::Esc | KeyCode::Char('q') => {
                self.prompt = None;
                self.report = Report::info("cancelled");
            }
            KeyCode::Up | KeyCode::Char('k') => p.selected = p.selected.saturating_sub(1),
            KeyCode::Down | KeyCode::Char('j') | KeyCode::Tab if p.selected + 1 < n => {
                p.selected += 1;
            }
            // A digit selects; Enter confirms (as the prompt's hint says),
            // so a digit never completes a stage the next Enter would answer.
            KeyCode::Char(c @ '1'..='9') => {
                let i = c as usize - '1' as usize;
                if i < n {
                    p.selected = i;
                }
            }
            KeyCode::Enter | KeyCode::Char(' ') => return self.pick(),
            _ => {}
        }
        None
    }

    fn pick(&mut self) -> Option<Command> {
        let p = self.prompt.as_mut()?;
        if p.custom && p.selected + 1 == p.choices.len() {
            p.input = Some(String::new());
            return None;
        }
        let i = p.selected;
        self.complete(Value::Index(i))
    }

    fn complete(&mut self, value: Value) -> Option<Command> {
        let p = self.prompt.as_mut()?;
        let stage = p.stage.clone();
        let label = match &value {
            Value::Index(i) => p
                .choices
                .get(*i)
                .map(|c| c.label.clone())
                .unwrap_or_default(),
            Value::Text(t) => t.clone(),
        };
        let time = |value: &Value| -> Result<i64, String> {
            match value {
                Value::Index(i) => Ok(TIME_CHOICES[(*i).min(TIME_CHOICES.len() - 1)].1),
                Value::Text(t) => parse_duration_ms(t),
            }
        };
        match stage {
            Stage::Advance => match time(&value) {
                Ok(ms) => {
                    self.prompt = None;
                    Some(Command::Advance { ms })
                }
                Err(e) => {
                    p.error = Some(e);
                    None
                }
            },
            Stage::FailCode => {
                if label.is_empty() || label.chars().any(char::is_whitespace) {
                    p.error = Some("a code is one word, e.g. PROVIDER_DOWN".into());
                    return None;
                }
                self.open(Stage::FailClass { code: label });
                None
            }
            Stage::FailClass { code } => {
                let class = match value {
                    Value::Index(i) => FailClass::ALL[i.min(FailClass::ALL.len() - 1)],
                    Value::Text(_) => return None,
                };
                if class.takes_a_delay() {
                    self.open(Stage::RetryAfter { code, class });
                    return None;
                }
                self.prompt = None;
                Some(Command::Fail {
                    code,
                    class,
                    retry_after_ms: None,
                })
            }
            Stage::RetryAfter { code, class } => match time(&value) {
                Ok(ms) => {
                    self.prompt = None;
                    Some(Command::Fail {
                        code,
                        class,
                        retry_after_ms: Some(ms),
                    })
                }
                Err(e) => {
                    p.error = Some(e);
                    None
                }
            },
            Stage::RespondTarget => {
                let target = match value {
                    Value::Index(0) => ResponseTarget::Live,
                    Value::Index(i) => {
                        let n = self.superseded_attempts().get(i - 1).copied().unwrap_or(1);
                        ResponseTarget::Attempt(n)
                    }
                    Value::Text(_) => return None,
                };
                self.open(Stage::RespondBody { target });
                None
            }
            Stage::RespondBody { target } => {
                if let Err(e) = serde_json_check(&label) {
                    p.error = Some(e);
                    return None;
                }
                self.prompt = None;
                Some(Command::Respond {
                    target,
                    body: label,
                })
            }
            Stage::Quarantine {
                instance,
                quarantine,
            } => {
                self.prompt = None;
                if value_is(&value, 0) {
                    Some(Command::SetQuarantine {
                        instance,
                        quarantine,
                    })
                } else {
                    self.report = Report::info("cancelled: nothing was changed");
                    None
                }
            }
            Stage::Pause { targets } => {
                let Value::Index(i) = value else {
                    return None;
                };
                let t = targets.get(i).cloned()?;
                self.prompt = None;
                Some(Command::SetPause {
                    kind: t.kind,
                    value: t.value,
                    pause: !t.paused,
                })
            }
            Stage::Resolve => {
                let r = match value {
                    Value::Index(i) => Resolution::ALL[i.min(2)],
                    Value::Text(_) => return None,
                };
                self.prompt = None;
                Some(Command::Resolve(r))
            }
            Stage::MigrateTarget { failed_of } => {
                let target = match value {
                    Value::Index(_) => label.trim_start_matches("deployment ").to_string(),
                    Value::Text(t) if t.is_empty() => {
                        p.error = Some("type the model file's path".into());
                        return None;
                    }
                    Value::Text(t) => t,
                };
                self.prompt = None;
                Some(Command::PreviewMigration {
                    target,
                    mapping: None,
                    reset_budget: false,
                    failed_of,
                })
            }
            Stage::MigrateConfirm(preview) => {
                let again = |mapping: Vec<(String, String)>, reset_budget: bool| {
                    Some(Command::PreviewMigration {
                        target: preview.target.clone(),
                        mapping: Some(mapping),
                        reset_budget,
                        failed_of: preview.failed_of,
                    })
                };
                match (value, label.as_str()) {
                    (Value::Text(t), _) => match parse_mapping(&t) {
                        Ok(m) => {
                            self.prompt = None;
                            again(m, preview.reset_budget)
                        }
                        Err(e) => {
                            p.error = Some(e);
                            None
                        }
                    },
                    (_, "apply") => {
                        self.prompt = None;
                        Some(Command::Migrate)
                    }
                    (_, "cancel") => {
                        self.prompt = None;
                        self.report = Report::info("migration cancelled: nothing was changed");
                        None
                    }
                    _ => {
                        self.prompt = None;
                        again(preview.mapping.clone(), !preview.reset_budget)
                    }
                }
            }
        }
    }
}

enum Value {
    Index(usize),
    Text(String),
}

fn value_is(v: &Value, i: usize) -> bool {
    matches!(v, Value::Index(x) if *x == i)
}

/// A duration typed at a prompt, in milliseconds: the short form the menus
/// display (`30s`, `5m`, `2h30m`, `1d`) or an ISO-8601 duration, read by the
/// engine's one parser of typed durations (the command line's too).
pub fn parse_duration_ms(text: &str) -> Result<i64, String> {
    let d: Duration = qflow_engine::duration::parse_input(text).map_err(|e| e.message)?;
    let ms = d.as_millis().min(i64::MAX as u128) as i64;
    if ms == 0 {
        return Err("zero does not move time: try 30s".into());
    }
    Ok(ms)
}

/// `OLD=NEW, OLD=NEW` typed at the migration prompt (empty: no mapping).
fn parse_mapping(text: &str) -> Result<Vec<(String, String)>, String> {
    text.split([',', ' '])
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|pair| match pair.split_once('=') {
            Some((a, b)) if !a.trim().is_empty() && !b.trim().is_empty() => {
                Ok((a.trim().to_string(), b.trim().to_string()))
            }
            _ => Err(format!(
                "`{pair}`: write OLD=NEW (node ids), comma-separated"
            )),
        })
        .collect()
}

/// A response body must be a JSON object (it becomes the task's variables).
fn serde_json_check(text: &str) -> Result<(), String> {
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(serde_json::Value::Object(_)) => Ok(()),
        Ok(_) => Err("a response body is a JSON object, e.g. {\"approved\": true}".into()),
        Err(e) => Err(format!("not JSON: {e}")),
    }
}
