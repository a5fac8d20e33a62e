//! A scenario checked against the model it is about to drive.
//!
//! A scenario is keyed by names the model defines: `tasks` by the `q:task`
//! name of a registered task, `channels` and `deliveries` by the `q:channel`
//! name of a channel call, and `events` by node id. An entry under a name the
//! model never uses is never consulted, so every task succeeds and a test of
//! a failure passes green. The check refuses such a scenario before any
//! decision is taken, naming the key and the closest name the model has.
//!
//! Both faces that drive a run (`qflow run` and the console) call [`check`];
//! `--resolve NODE=…` is checked by [`unknown_node`].

use std::collections::BTreeSet;

use crate::graph::{Graph, Kind};
use crate::scenario::{key, Scenario, ScenarioError};

/// How scenarios are keyed, in one sentence every refusal ends with.
pub const KEYING: &str = "scenarios key `tasks` by the q:task name of a registered task, `channels` and `deliveries` by the q:channel name of a channel call, and events by node id";

/// The names a model offers a scenario.
struct Names<'g> {
    /// q:task name → the node ids that run it.
    tasks: Vec<(&'g str, &'g str)>,
    channels: BTreeSet<&'g str>,
    graph: &'g Graph,
}

impl<'g> Names<'g> {
    fn of(graph: &'g Graph) -> Names<'g> {
        let mut tasks = Vec::new();
        let mut channels = BTreeSet::new();
        for (id, n) in &graph.nodes {
            if let Kind::Task { task, call, .. } = &n.kind {
                match call {
                    Some(c) => {
                        channels.insert(c.channel.as_str());
                    }
                    None => tasks.push((task.as_str(), id.as_str())),
                }
            }
        }
        Names {
            tasks,
            channels,
            graph,
        }
    }

    fn task_names(&self) -> BTreeSet<&'g str> {
        self.tasks.iter().map(|(t, _)| *t).collect()
    }
}

fn listing<'a>(what: &str, names: impl IntoIterator<Item = &'a str>) -> String {
    let names: Vec<String> = names.into_iter().map(|n| format!("`{n}`")).collect();
    if names.is_empty() {
        format!("the model has no {what}")
    } else {
        format!(
            "the model's {what}: {}",
            qflow_model::text::capped_list(&names)
        )
    }
}

fn refusal(path: String, what: String) -> ScenarioError {
    ScenarioError {
        path,
        message: format!("{what}; {KEYING}"),
    }
}

/// Every scenario entry the model would never consult, in the scenario's
/// order (`tasks`, `channels`, `deliveries`, `events`). Empty: the scenario
/// fits the model.
pub fn check(scenario: &Scenario, graph: &Graph) -> Vec<ScenarioError> {
    let names = Names::of(graph);
    let task_names = names.task_names();
    let mut out = Vec::new();
    for name in scenario.tasks.keys() {
        if task_names.contains(name.as_str()) {
            continue;
        }
        let path = format!("tasks.{}", key(name));
        let hint = if let Some((task, _)) = names.tasks.iter().find(|(_, id)| *id == name) {
            format!(
                "`{name}` is the id of the node whose q:task is `{task}` (did you mean `{task}`?)"
            )
        } else if names.channels.contains(name.as_str()) {
            format!(
                "`{name}` is a channel call's channel: script its counterpart under `channels.{}`",
                key(name)
            )
        } else {
            let mut m = format!("no registered task of the model is named `{name}`");
            match qflow_model::suggest::closest(name, task_names.iter().copied()) {
                Some(s) => m.push_str(&format!(" (did you mean `{s}`?)")),
                None => m.push_str(&format!(
                    " ({})",
                    listing("q:task names", task_names.iter().copied())
                )),
            }
            m
        };
        out.push(refusal(path, hint));
    }
    for (family, keys) in [
        ("channels", scenario.channels.keys().collect::<Vec<_>>()),
        ("deliveries", scenario.deliveries.keys().collect()),
    ] {
        for name in keys {
            if names.channels.contains(name.as_str()) {
                continue;
            }
            let path = format!("{family}.{}", key(name));
            let by_node = graph.nodes.get(name.as_str()).and_then(|n| match &n.kind {
                Kind::Task { call: Some(c), .. } => Some(c.channel.as_str()),
                _ => None,
            });
            let hint = if let Some(channel) = by_node {
                format!("`{name}` is the id of the node that calls channel `{channel}` (did you mean `{channel}`?)")
            } else if task_names.contains(name.as_str()) {
                format!(
                    "`{name}` is a registered task: script its outcomes under `tasks.{}`",
                    key(name)
                )
            } else {
                let mut m = format!("no channel call of the model uses channel `{name}`");
                match qflow_model::suggest::closest(name, names.channels.iter().copied()) {
                    Some(s) => m.push_str(&format!(" (did you mean `{s}`?)")),
                    None => m.push_str(&format!(
                        " ({})",
                        listing("channels", names.channels.iter().copied())
                    )),
                }
                m
            };
            out.push(refusal(path, hint));
        }
    }
    for (i, e) in scenario.events.iter().enumerate() {
        let field = match e.event {
            crate::scenario::ExternalEvent::Redeliver { .. } => "redeliver",
            crate::scenario::ExternalEvent::Resolve { .. } => "resolve",
        };
        if let Some(m) = unknown_node(graph, e.event.node()) {
            out.push(refusal(format!("events[{i}].{field}"), m));
        }
    }
    out
}

/// Why `node` names no node of the model (with the closest id, or the
/// node whose q:task is that name), or `None` when it exists.
pub fn unknown_node(graph: &Graph, node: &str) -> Option<String> {
    if graph.nodes.contains_key(node) {
        return None;
    }
    let names = Names::of(graph);
    let mut m = format!("the model has no node `{node}`");
    let by_task: Vec<&str> = names
        .tasks
        .iter()
        .filter(|(t, _)| *t == node)
        .map(|(_, id)| *id)
        .collect();
    if let [id] = by_task.as_slice() {
        m.push_str(&format!(
            "; `{node}` is the q:task of node `{id}` (did you mean `{id}`?)"
        ));
    } else if let Some(s) =
        qflow_model::suggest::closest(node, names.graph.nodes.keys().map(String::as_str))
    {
        m.push_str(&format!(" (did you mean `{s}`?)"));
    } else {
        let tasks: Vec<&str> = names.tasks.iter().map(|(_, id)| *id).collect();
        m.push_str(&format!(
            " (its task nodes: {})",
            qflow_model::text::capped_list(&tasks)
        ));
    }
    Some(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MODEL: &str = r#"<definitions xmlns="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:q="urn:qflow:bpmn:1">
  <process id="p" isExecutable="true">
    <startEvent id="s"/>
    <sequenceFlow id="f1" sourceRef="s" targetRef="charge"/>
    <serviceTask id="charge" q:task="payments.charge"/>
    <sequenceFlow id="f2" sourceRef="charge" targetRef="auth"/>
    <serviceTask id="auth" q:channel="bank" q:operation="authorize">
      <extensionElements><q:timeout duration="PT30S"/></extensionElements>
    </serviceTask>
    <sequenceFlow id="f3" sourceRef="auth" targetRef="e"/>
    <endEvent id="e"/>
  </process>
</definitions>"#;

    fn verdicts(scenario: &str) -> Vec<String> {
        let defs = qflow_model::load(MODEL).expect("model loads");
        let graph = Graph::compile(&defs).expect("compiles");
        check(&Scenario::parse(scenario).unwrap(), &graph)
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn a_scenario_keyed_by_the_models_names_fits() {
        assert!(verdicts(
            r#"{"tasks":{"payments.charge":[{"ok":{}}]},"channels":{"bank":[{"silent":true}]},
                "deliveries":{"bank":[{"ok":true}]},"events":[{"resolve":"charge","as":"retry"}]}"#
        )
        .is_empty());
    }

    #[test]
    fn a_task_keyed_by_its_node_id_names_the_task() {
        assert_eq!(
            verdicts(r#"{"tasks":{"charge":[{"fail":{"code":"X","class":"permanent"}}]}}"#),
            [format!("field `tasks.charge`: `charge` is the id of the node whose q:task is `payments.charge` (did you mean `payments.charge`?); {KEYING}")]
        );
    }

    #[test]
    fn a_misspelt_task_channel_or_event_node_gets_a_did_you_mean() {
        let v = verdicts(
            r#"{"tasks":{"payments.chrage":[{"ok":{}}]},"channels":{"bnak":[{"silent":true}]},
                "deliveries":{"auth":[{"ok":true}]},"events":[{"redeliver":"chrage"}]}"#,
        );
        assert_eq!(v.len(), 4, "{v:#?}");
        assert!(v[0].starts_with("field `tasks.\"payments.chrage\"`: no registered task of the model is named `payments.chrage` (did you mean `payments.charge`?)"), "{}", v[0]);
        assert!(v[1].starts_with("field `channels.bnak`: no channel call of the model uses channel `bnak` (did you mean `bank`?)"), "{}", v[1]);
        assert!(
            v[2].starts_with(
                "field `deliveries.auth`: `auth` is the id of the node that calls channel `bank`"
            ),
            "{}",
            v[2]
        );
        assert!(v[3].starts_with("field `events[0].redeliver`: the model has no node `chrage` (did you mean `charge`?)"), "{}", v[3]);
    }

    #[test]
    fn a_node_named_by_its_task_points_at_the_node() {
        let defs = qflow_model::load(MODEL).unwrap();
        let graph = Graph::compile(&defs).unwrap();
        assert_eq!(
            unknown_node(&graph, "payments.charge").unwrap(),
            "the model has no node `payments.charge`; `payments.charge` is the q:task of node `charge` (did you mean `charge`?)"
        );
        assert_eq!(unknown_node(&graph, "charge"), None);
    }
}
