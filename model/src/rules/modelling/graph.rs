//! A process's flows indexed by node, and the paths the fake-join rule follows.

use foldhash::HashMap;

use crate::model::{Flow, Process};

use super::is_gateway;

/// A process's flows indexed by node: what every rule asks.
pub struct Graph<'a> {
    pub p: &'a Process,
    index: HashMap<&'a str, usize>,
    /// Number of flows into node i.
    incoming: Vec<u32>,
    /// Flows out of node i: `out_flows[out_start[i]..out_start[i + 1]]`.
    out_start: Vec<u32>,
    out_flows: Vec<u32>,
    /// Flow i's source node, `u32::MAX` when it has no `sourceRef` or
    /// names no node.
    flow_sources: Vec<u32>,
    /// Nodes where two branches of one parallel split meet (computed once,
    /// when a fake join asks).
    meets: std::cell::OnceCell<Vec<usize>>,
}

impl<'a> Graph<'a> {
    pub fn new(p: &'a Process) -> Self {
        let n = p.nodes.len();
        let mut index: HashMap<&str, usize> =
            HashMap::with_capacity_and_hasher(n, Default::default());
        for (i, node) in p.nodes.iter().enumerate() {
            index.entry(node.id()).or_insert(i);
        }
        let mut incoming = vec![0u32; n];
        let mut out_count = vec![0u32; n + 1];
        let mut sources = Vec::with_capacity(p.flows.len());
        for f in &p.flows {
            let s = f
                .source
                .as_ref()
                .and_then(|s| index.get(s.value.as_str()).copied());
            if let Some(t) = f.target.as_ref().and_then(|t| index.get(t.value.as_str())) {
                incoming[*t] += 1;
            }
            if let Some(s) = s {
                out_count[s + 1] += 1;
            }
            sources.push(s);
        }
        for i in 0..n {
            out_count[i + 1] += out_count[i];
        }
        let out_start = out_count;
        let mut fill = out_start.clone();
        let mut out_flows = vec![0u32; p.flows.len()];
        for (fi, s) in sources.iter().enumerate() {
            if let Some(s) = *s {
                out_flows[fill[s] as usize] = fi as u32;
                fill[s] += 1;
            }
        }
        let flow_sources = sources
            .iter()
            .map(|s| s.map_or(u32::MAX, |s| s as u32))
            .collect();
        Graph {
            p,
            index,
            incoming,
            out_start,
            out_flows,
            flow_sources,
            meets: std::cell::OnceCell::new(),
        }
    }

    pub fn node_index(&self, id: &str) -> Option<usize> {
        self.index.get(id).copied()
    }

    pub fn incoming(&self, i: usize) -> usize {
        self.incoming[i] as usize
    }

    pub fn outgoing(&self, i: usize) -> impl Iterator<Item = &'a Flow> + '_ {
        let range = self.out_start[i] as usize..self.out_start[i + 1] as usize;
        self.out_flows[range]
            .iter()
            .map(|&f| &self.p.flows[f as usize])
    }

    /// The indices (into the process's flows) of the flows out of node
    /// `i`, in document order.
    pub(super) fn outgoing_indices(&self, i: usize) -> &[u32] {
        &self.out_flows[self.out_start[i] as usize..self.out_start[i + 1] as usize]
    }

    /// Whether flow `fi`'s `sourceRef` names a node of the process.
    pub(super) fn source_resolves(&self, fi: usize) -> bool {
        self.flow_sources[fi] != u32::MAX
    }

    pub fn out_count(&self, i: usize) -> usize {
        (self.out_start[i + 1] - self.out_start[i]) as usize
    }

    /// Node `i`'s `default` flow, where BPMN has one: on an activity or an
    /// exclusive, inclusive or complex gateway. Written on any other node
    /// (a parallel gateway, an event) it is no default flow, as bpmnlint
    /// reads it.
    pub(super) fn default_of(&self, i: usize) -> Option<&crate::model::Attr> {
        let n = &self.p.nodes[i];
        let has_default = super::is_activity(n)
            || matches!(
                &*n.element,
                "exclusiveGateway" | "inclusiveGateway" | "complexGateway"
            );
        if has_default {
            self.p.default_of(i)
        } else {
            None
        }
    }

    pub(super) fn is_default(&self, i: usize, flow: &Flow) -> bool {
        self.default_of(i)
            .is_some_and(|d| d.value.trim() == flow.id.value)
    }
}

/// Nodes where tokens of two branches of one parallel split (a parallel
/// gateway, or an activity's implicit split) arrive without a parallel join
/// between: each branch is followed until a joining parallel gateway.
pub(super) fn concurrent_meets<'g>(g: &'g Graph<'_>) -> &'g [usize] {
    g.meets.get_or_init(|| {
        let p = g.p;
        let n = p.nodes.len();
        let mut meets = Vec::new();
        let mut stamp = vec![u32::MAX; n];
        let mut branch_of = vec![0u32; n];
        let mut stack = Vec::new();
        for (fork, node) in p.nodes.iter().enumerate() {
            let forks = if node.element == "parallelGateway" {
                g.out_count(fork) > 1
            } else {
                g.outgoing(fork).filter(|f| f.condition.is_none()).count() > 1 && !is_gateway(node)
            };
            if !forks {
                continue;
            }
            for (b, f) in g.outgoing(fork).enumerate() {
                if let Some(t) = f.target.as_ref().and_then(|t| g.node_index(&t.value)) {
                    stack.push((t, b as u32));
                }
            }
            while let Some((i, b)) = stack.pop() {
                if stamp[i] == fork as u32 {
                    if branch_of[i] != b && !meets.contains(&i) {
                        meets.push(i);
                    }
                    continue;
                }
                stamp[i] = fork as u32;
                branch_of[i] = b;
                let joins = p.nodes[i].element == "parallelGateway" && g.incoming(i) > 1;
                if joins || i == fork {
                    continue;
                }
                for f in g.outgoing(i) {
                    if let Some(t) = f.target.as_ref().and_then(|t| g.node_index(&t.value)) {
                        stack.push((t, b));
                    }
                }
            }
        }
        meets
    })
}
