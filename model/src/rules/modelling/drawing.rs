//! Rules on the diagram (bpmndi): QF109 (an element not drawn), QF118
//! (shapes overlapping, or leaving their container) and QF127 (a shape not
//! of its element's standard size).

use foldhash::HashMap;

use crate::diagnostic::{Code, Diagnostic};
use crate::model::{Definitions, NodeKind, Process, ShapeBounds};
use crate::span::Span;

use super::{node_diag, tag_name, what, Emit};
use crate::rules::edit::Ctx;

/// Elements bpmnlint expects a diagram to draw (beside the flow nodes).
/// A `match`, not a list searched in turn: it is asked for each of the
/// ~80,000 ids of a large model.
fn drawn_kind(local: &str) -> bool {
    matches!(
        local,
        "sequenceFlow"
            | "participant"
            | "lane"
            | "messageFlow"
            | "textAnnotation"
            | "association"
            | "group"
            | "dataObjectReference"
            | "dataStoreReference"
    )
}

/// What the diagram draws, by the id of the BPMN element drawn: built once
/// for QF109 and QF118, which ask it of every element (building it twice
/// hashed the same 40,000 ids twice on the 20,000-task model).
pub(super) struct Drawn<'d> {
    /// Every element a shape or an edge draws (not a plane: a plane draws
    /// what is on it), with the bounds of the last shape or edge drawing it,
    /// as bpmnlint keeps it: an index into
    /// [`crate::model::Definitions::shape_bounds`] when that last drawing
    /// is a shape whose bounds place it, else `None` (an edge, a shape
    /// without bounds or without `x`/`y`: nothing to compare).
    by_id: HashMap<&'d str, Option<u32>>,
}

impl<'d> Drawn<'d> {
    pub(super) fn new(ctx: &Ctx<'d>) -> Self {
        let defs = ctx.defs;
        let mut by_id: HashMap<&str, Option<u32>> =
            HashMap::with_capacity_and_hasher(defs.diagram_elements.len(), Default::default());
        // Both lists are in document order (shape bounds by the index of
        // their drawing), so one cursor pairs each drawing with its bounds.
        let mut next = 0;
        for (k, d) in defs.diagram_elements.iter().enumerate() {
            while defs
                .shape_bounds
                .get(next)
                .is_some_and(|b| (b.diagram as usize) < k)
            {
                next += 1;
            }
            if is_plane(ctx, d.span) {
                continue;
            }
            let bounds = defs
                .shape_bounds
                .get(next)
                .filter(|b| b.diagram as usize == k && b.placed)
                .map(|_| next as u32);
            by_id.insert(d.bpmn_element.as_str(), bounds);
        }
        Drawn { by_id }
    }

    fn draws(&self, id: &str) -> bool {
        self.by_id.contains_key(id)
    }

    fn bounds(&self, defs: &'d Definitions, id: &str) -> Option<&'d ShapeBounds> {
        self.by_id
            .get(id)
            .copied()
            .flatten()
            .map(|k| &defs.shape_bounds[k as usize])
    }
}

/// QF109 no-bpmndi: every flow element, participant, lane (of a container's
/// first lane set), artifact and message flow has a shape or an edge. A
/// `BPMNPlane` draws nothing inside its parent: a sub-process that is only
/// the plane of a diagram of its own, with no shape where it stands, is
/// missing (bpmnlint counts the elements on planes, never the planes).
pub(super) fn no_bpmndi(ctx: &Ctx<'_>, drawn: &Drawn<'_>, e: &mut Emit<'_, '_>) {
    if !e.on(Code::QF109) {
        return;
    }
    let defs = ctx.defs;
    // Which declarations are nodes, found by where they start (ids and
    // nodes are both in document order): hashing every node's id into a
    // set and looking every declaration up in it was half of this rule's
    // 3.4 ms on the 20,000-task model.
    let mut node_starts: Vec<usize> = defs
        .processes
        .iter()
        .flat_map(|p| p.nodes.iter().map(|n| n.span.start()))
        .collect();
    if !node_starts.windows(2).all(|w| w[0] <= w[1]) {
        node_starts.sort_unstable();
    }
    // Any other declaration is visual when it shares its id with a node (a
    // duplicate id, QF003). Asked only of those not drawn (the process, the
    // definitions, a message…): the first few by a walk over the nodes,
    // then, if there are more, by a set of the nodes' ids built once.
    let mut node_ids: Option<foldhash::HashSet<&str>> = None;
    let mut walks_left = 8;
    let mut is_node_id = |id: &str| {
        if node_ids.is_none() && walks_left > 0 {
            walks_left -= 1;
            return defs
                .processes
                .iter()
                .any(|p| p.nodes.iter().any(|n| n.id() == id));
        }
        node_ids
            .get_or_insert_with(|| {
                defs.processes
                    .iter()
                    .flat_map(|p| p.nodes.iter().map(|n| n.id()))
                    .collect()
            })
            .contains(id)
    };
    // A process's later lane sets are alternative partitions: bpmnlint
    // expects the lanes of the first lane set drawn, not theirs.
    let later_lane_sets: Vec<Span> = defs
        .processes
        .iter()
        .flat_map(|p| p.later_lane_sets.iter().copied())
        .collect();
    for decl in &defs.ids {
        let id = decl.id.value.as_str();
        let local = &*decl.element.local;
        if local == "lane"
            && later_lane_sets.iter().any(|s| {
                s.start() <= decl.element.span.start() && decl.element.span.start() < s.end()
            })
        {
            continue;
        }
        // A drawing is not drawn: bpmnlint asks it of BPMN elements only,
        // so a shape whose own id repeats a node's is not "missing".
        if is_drawing(local) {
            continue;
        }
        if drawn.draws(id) {
            continue;
        }
        let visual = drawn_kind(local)
            || node_starts
                .binary_search(&decl.element.span.start())
                .is_ok()
            || is_node_id(id);
        if visual {
            e.push(
                Diagnostic::new(Code::QF109, decl.element.name_span, format!("<{}> `{id}` is missing from the diagram", decl.element.local))
                    .element(id)
                    .label("no BPMNShape or BPMNEdge draws it")
                    .help("open the model in a graphical modeller and lay it out, or add the bpmndi shape or edge"),
            );
        }
    }
    // An element without an id can never be drawn (a drawing names the
    // element by its id): bpmnlint reports it too.
    let no_id = |local: &str, at: Span| {
        Diagnostic::new(
            Code::QF109,
            at,
            format!("<{local}> without an id is missing from the diagram"),
        )
        .element("")
        .label("no BPMNShape or BPMNEdge can draw it")
        .help("give it an id, then lay it out in a graphical modeller")
    };
    for p in &defs.processes {
        for n in p.nodes.iter().filter(|n| n.id().is_empty()) {
            e.push(no_id(&n.element, n.name_span));
        }
        for f in p.flows.iter().filter(|f| f.id.value.is_empty()) {
            e.push(no_id("sequenceFlow", f.id.span));
        }
    }
}

/// The drawing at `span` is a `BPMNPlane` (read from its start tag: the
/// model keeps shapes, edges and planes alike as drawings of an element).
///
/// Asked of each of the ~40,000 drawings of a large model, so it reads the
/// name as bytes up to the first delimiter (an XML name holds no
/// whitespace, `/` or `>`, and the parser checked it): decoding the tag's
/// characters to find it was 28 M instructions on the 20,000-task model.
fn is_plane(ctx: &Ctx<'_>, span: Span) -> bool {
    let tag = ctx
        .source
        .as_bytes()
        .get(span.start() + 1..span.end())
        .unwrap_or_default();
    let end = tag
        .iter()
        .position(|&b| b.is_ascii_whitespace() || b == b'/' || b == b'>')
        .unwrap_or(0);
    let name = &tag[..end];
    name == b"BPMNPlane" || name.ends_with(b":BPMNPlane")
}

/// The bpmndi elements (and their labels and styles), which draw BPMN
/// elements and are never drawn themselves.
fn is_drawing(local: &str) -> bool {
    matches!(
        local,
        "BPMNDiagram" | "BPMNPlane" | "BPMNShape" | "BPMNEdge" | "BPMNLabel" | "BPMNLabelStyle"
    )
}

/// The type name `standard-size` sizes an element by (bpmnlint's, most
/// specific first: a transaction is a sub-process, a user task a task), or
/// `None` for what it does not size (lanes, artifacts, …; a participant is
/// judged apart).
fn sized_type(local: &str) -> Option<&'static str> {
    Some(match local {
        "subProcess" | "transaction" | "adHocSubProcess" => "bpmn:SubProcess",
        "callActivity" => "bpmn:CallActivity",
        "task" | "serviceTask" | "sendTask" | "receiveTask" | "userTask" | "manualTask"
        | "scriptTask" | "businessRuleTask" => "bpmn:Task",
        "dataObjectReference" => "bpmn:DataObjectReference",
        "dataStoreReference" => "bpmn:DataStoreReference",
        l if l.ends_with("Gateway") => "bpmn:Gateway",
        l if l.ends_with("Event") => "bpmn:Event",
        _ => return None,
    })
}

/// QF127 standard-size: every shape drawing a task, call activity,
/// collapsed sub-process, gateway, event or data reference has its type's
/// standard size (bpmn-js's, or a configuration's); an empty pool (a
/// participant without a process) its standard height, or width when drawn
/// vertically. Containers that follow their content (expanded sub-processes,
/// pools with a process, lanes) are not judged. Each shape is judged on its
/// own, as bpmnlint does: an element drawn twice may be reported twice.
pub(super) fn standard_size(ctx: &Ctx<'_>, e: &mut Emit<'_, '_>) {
    let defs = ctx.defs;
    if !e.on(Code::QF127) || defs.shape_bounds.is_empty() {
        return;
    }
    // The element each id names (its first declaration).
    let mut element: HashMap<&str, &crate::model::ElementRef> =
        HashMap::with_capacity_and_hasher(defs.ids.len(), Default::default());
    for d in &defs.ids {
        element.entry(d.id.value.as_str()).or_insert(&d.element);
    }
    // Participants whose process reference names an element: their pool
    // follows its content.
    let pools_with_content: foldhash::HashSet<&str> = defs
        .participants
        .iter()
        .filter(|pa| {
            pa.process_ref
                .as_ref()
                .is_some_and(|r| element.contains_key(r.value.as_str()))
        })
        .map(|pa| pa.id())
        .collect();
    for b in &defs.shape_bounds {
        let drawing = &defs.diagram_elements[b.diagram as usize];
        let id = drawing.bpmn_element.as_str();
        let Some(el) = element.get(id) else {
            continue;
        };
        let expected = if el.local == "participant" {
            if pools_with_content.contains(id) {
                continue;
            }
            let Some(size) = e.settings.standard_size("bpmn:Participant") else {
                continue;
            };
            if b.horizontal {
                crate::config::Size {
                    width: None,
                    height: size.height,
                }
            } else {
                crate::config::Size {
                    width: size.width,
                    height: None,
                }
            }
        } else {
            if b.expanded && matches!(&*el.local, "subProcess" | "transaction" | "adHocSubProcess")
            {
                continue;
            }
            let Some(size) = sized_type(&el.local).and_then(|t| e.settings.standard_size(t)) else {
                continue;
            };
            size
        };
        // Compared as bpmnlint compares them (f64): a height written
        // 35.999999999999886 is not the standard 36.
        let off = |want: Option<f64>, have: f64| want.is_some_and(|w| w != have);
        if !off(expected.width, b.width) && !off(expected.height, b.height) {
            continue;
        }
        let (message, help) = match (expected.width, expected.height) {
            (Some(w), Some(h)) => (
                format!("is {}x{}; the standard size is {w}x{h}", b.width, b.height),
                format!("draw it {w}x{h}: set width=\"{w}\" height=\"{h}\" on its dc:Bounds, or resize it in a modeller"),
            ),
            (Some(w), None) => (
                format!("is {} wide; the standard width is {w}", b.width),
                format!("set width=\"{w}\" on its dc:Bounds, or resize it in a modeller"),
            ),
            (None, Some(h)) => (
                format!("is {} high; the standard height is {h}", b.height),
                format!("set height=\"{h}\" on its dc:Bounds, or resize it in a modeller"),
            ),
            (None, None) => continue,
        };
        e.push(
            Diagnostic::new(
                Code::QF127,
                tag_name(ctx, drawing.span),
                format!("<{}> `{id}` {message}", el.local),
            )
            .element(id)
            .label("this shape")
            .related(el.name_span, "the element it draws")
            .help(format!("{help}; a team that draws other sizes sets them in the configuration: \"standard-size\": [\"warn\", {{ \"bpmn:Task\": {{ \"width\": 120, \"height\": 80 }} }}]")),
        );
    }
}

/// A shape QF118 judges: a flow node of a process, or a data object or data
/// store reference (flow elements too, drawn as shapes; bpmnlint compares
/// them with the nodes of their container).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Item {
    /// (process, node)
    Node(usize, usize),
    /// index into `defs.ids`
    Data(usize),
}

/// QF118 no-overlapping-elements, as bpmnlint judges it: the participants of
/// one collaboration overlap; the shapes of one process or sub-process (its
/// flow nodes and data references) overlap, a boundary event and its host
/// aside; or a shape leaves its expanded sub-process or the pool drawing its
/// process (a data store reference may). Where an element is drawn twice,
/// the last drawing counts.
pub(super) fn overlapping(defs: &Definitions, drawn: &Drawn<'_>, e: &mut Emit<'_, '_>) {
    if !e.on(Code::QF118) || defs.shape_bounds.is_empty() {
        return;
    }
    // Bounds by drawn id (the last shape drawing it, as bpmnlint keeps it).
    let bounds = |id: &str| drawn.bounds(defs, id);
    let mut overlaps: Vec<Item> = Vec::new();
    let mut outside: Vec<Item> = Vec::new();
    // Participants overlap within their collaboration.
    let collaborations: Vec<Span> = defs
        .ids
        .iter()
        .filter(|d| d.element.local == "collaboration")
        .map(|d| d.element.span)
        .collect();
    let collaboration_of = |at: usize| {
        collaborations
            .iter()
            .position(|c| c.start() <= at && at < c.end())
    };
    let parts: Vec<(usize, Option<usize>, &ShapeBounds)> = defs
        .participants
        .iter()
        .enumerate()
        .filter_map(|(k, pa)| {
            bounds(pa.id()).map(|b| (k, collaboration_of(pa.name_span.start()), b))
        })
        .collect();
    let mut part_hits = vec![false; defs.participants.len()];
    for (a, (ka, ca, ba)) in parts.iter().enumerate() {
        for (kb, cb, bb) in &parts[a + 1..] {
            if ca == cb && ba.finite && bb.finite && collide(ba, bb) {
                part_hits[*ka] = true;
                part_hits[*kb] = true;
            }
        }
    }
    for (k, hit) in part_hits.iter().enumerate() {
        if *hit {
            let pa = &defs.participants[k];
            e.push(
                Diagnostic::new(
                    Code::QF118,
                    pa.name_span,
                    format!(
                        "<participant> `{}` overlaps another element in the diagram",
                        pa.id()
                    ),
                )
                .element(pa.id())
                .label("overlaps")
                .help("move the shapes apart in the diagram"),
            );
        }
    }
    // Data object and data store references: their process and sub-process,
    // found by where they are written.
    let mut data: Vec<(usize, Option<usize>, usize)> = Vec::new(); // (process, scope, id)
    for (k, d) in defs.ids.iter().enumerate() {
        if !matches!(
            &*d.element.local,
            "dataObjectReference" | "dataStoreReference"
        ) {
            continue;
        }
        let at = d.element.span.start();
        let Some(pi) = defs
            .processes
            .iter()
            .position(|p| p.span.start() <= at && at < p.span.end())
        else {
            continue;
        };
        let scope = defs.processes[pi]
            .nodes
            .iter()
            .enumerate()
            .filter(|(_, n)| n.span.start() < at && at < n.span.end())
            .max_by_key(|(_, n)| n.span.start())
            .map(|(i, _)| i);
        data.push((pi, scope, k));
    }
    for (pi, p) in defs.processes.iter().enumerate() {
        // The pool drawing this process, if any (the last participant naming it).
        let pool = p.id.as_ref().and_then(|pid| {
            let part = defs.participants.iter().rev().find(|pa| {
                pa.process_ref
                    .as_ref()
                    .is_some_and(|r| r.value == pid.value)
            })?;
            bounds(part.id())
        });
        // Group the process's drawn shapes by scope.
        let mut groups: HashMap<Option<usize>, Vec<(Item, &ShapeBounds)>> = HashMap::default();
        for (i, n) in p.nodes.iter().enumerate() {
            if let Some(b) = bounds(n.id()) {
                groups
                    .entry(n.scope)
                    .or_default()
                    .push((Item::Node(pi, i), b));
            }
        }
        for &(dp, scope, k) in &data {
            if dp == pi {
                if let Some(b) = bounds(&defs.ids[k].id.value) {
                    groups.entry(scope).or_default().push((Item::Data(k), b));
                }
            }
        }
        for (scope, mut shapes) in groups {
            let parent = match scope {
                None => pool,
                Some(s) => bounds(p.nodes[s].id()).filter(|b| b.expanded),
            };
            if let Some(parent) = parent {
                for (item, b) in &shapes {
                    let store = matches!(item, Item::Data(k) if defs.ids[*k].element.local == "dataStoreReference");
                    if !store && !inside(b, parent) {
                        outside.push(*item);
                    }
                }
            }
            // A shape that is not placeable collides with nothing.
            shapes.retain(|(_, b)| b.finite);
            colliding_pairs(&mut shapes, |ia, ib| {
                if let (Item::Node(_, na), Item::Node(_, nb)) = (ia, ib) {
                    if attached(p, na, nb) || attached(p, nb, na) {
                        return;
                    }
                }
                overlaps.push(ia);
                overlaps.push(ib);
            });
        }
    }
    overlaps.sort_unstable();
    overlaps.dedup();
    outside.sort_unstable();
    outside.dedup();
    let diag = |item: Item, message: &str| match item {
        Item::Node(pi, i) => {
            let n = &defs.processes[pi].nodes[i];
            node_diag(Code::QF118, n, format!("{} {message}", what(n)))
        }
        Item::Data(k) => {
            let d = &defs.ids[k];
            Diagnostic::new(
                Code::QF118,
                d.element.name_span,
                format!("<{}> `{}` {message}", d.element.local, d.id.value),
            )
            .element(d.id.value.as_str())
        }
    };
    for item in overlaps {
        e.push(
            diag(item, "overlaps another element in the diagram")
                .label("overlaps")
                .help("move the shapes apart in the diagram"),
        );
    }
    for item in outside {
        e.push(
            diag(item, "lies outside its parent's boundary in the diagram")
                .label("outside its parent")
                .help("move the shape inside its pool or expanded sub-process"),
        );
    }
}

/// A shape covering more grid cells than this along one axis is compared
/// with every other shape instead of being put in each of its cells.
const MAX_CELLS_PER_AXIS: i64 = 8;

/// Calls `found(a, b)` for every pair of `shapes` that [`collide`] (a pair
/// may be found more than once; the caller dedups).
///
/// Shapes are put in the cells of a square grid they cover (the cell side
/// is the mean of the shapes' larger sides), and only shapes sharing a cell
/// are compared: a modeller lays nodes out in rows and columns, so sweeping
/// along one axis compared every shape with its whole column (400 shapes
/// each on the 20,000-task model: 6 % of `qflow check`). Two shapes that
/// collide share a point, which lies in a cell both cover, so no pair is
/// missed; each candidate is then checked with [`collide`] itself.
fn colliding_pairs<T: Copy>(shapes: &mut [(T, &ShapeBounds)], mut found: impl FnMut(T, T)) {
    if shapes.len() < 2 {
        return;
    }
    // Closed hulls: with a negative width or height `x + width` is the low side.
    let hull = |b: &ShapeBounds| {
        let (x2, y2) = (b.x + b.width, b.y + b.height);
        (b.x.min(x2), b.y.min(y2), b.x.max(x2), b.y.max(y2))
    };
    let side = shapes
        .iter()
        .map(|(_, b)| {
            let (x0, y0, x1, y1) = hull(b);
            (x1 - x0).max(y1 - y0)
        })
        .sum::<f64>()
        / shapes.len() as f64;
    if !side.is_finite() || side < 1.0 {
        return sweep(shapes, found);
    }
    // Monotonic, so a point inside a hull falls in one of the hull's cells.
    let cell = |v: f64| (v / side).floor() as i64;
    let mut entries: Vec<(i64, i64, u32)> = Vec::with_capacity(shapes.len() * 2);
    let mut big: Vec<u32> = Vec::new();
    for (k, (_, b)) in shapes.iter().enumerate() {
        let (x0, y0, x1, y1) = hull(b);
        let (cx0, cy0, cx1, cy1) = (cell(x0), cell(y0), cell(x1), cell(y1));
        if cx1.saturating_sub(cx0) >= MAX_CELLS_PER_AXIS
            || cy1.saturating_sub(cy0) >= MAX_CELLS_PER_AXIS
        {
            big.push(k as u32);
            continue;
        }
        for cx in cx0..=cx1 {
            for cy in cy0..=cy1 {
                entries.push((cx, cy, k as u32));
            }
        }
    }
    group_by_cell(&mut entries);
    for run in entries.chunk_by(|a, b| (a.0, a.1) == (b.0, b.1)) {
        for (n, &(_, _, a)) in run.iter().enumerate() {
            for &(_, _, b) in &run[n + 1..] {
                let ((ia, ba), (ib, bb)) = (shapes[a as usize], shapes[b as usize]);
                if collide(ba, bb) {
                    found(ia, ib);
                }
            }
        }
    }
    for &a in &big {
        let (ia, ba) = shapes[a as usize];
        for (k, &(ib, bb)) in shapes.iter().enumerate() {
            if k != a as usize && collide(ba, bb) {
                found(ia, ib);
            }
        }
    }
}

/// Put the entries of each cell next to each other (in no particular order
/// of cells, nor of shapes within a cell: the pairs found are deduplicated
/// and sorted by the caller).
///
/// Sorting the `(i64, i64, u32)` triples was 28.7 M of the rule's 48 M
/// instructions on the 20,000-task model; when every cell coordinate fits
/// in 32 bits (any drawing a person made: 2^31 cells of at least one unit),
/// each entry is packed into one `u128` first, whose sort is a few times
/// cheaper, and unpacked after.
fn group_by_cell(entries: &mut Vec<(i64, i64, u32)>) {
    if let Some(counted) = counting_sort(entries) {
        *entries = counted;
        return;
    }
    let packed: Option<Vec<u128>> = entries
        .iter()
        .map(|&(cx, cy, k)| {
            let (cx, cy) = (i32::try_from(cx).ok()?, i32::try_from(cy).ok()?);
            // The casts are bijections: equal cells stay equal, distinct
            // cells distinct (the order of negative cells changes, which
            // nothing relies on).
            Some(((cx as u32 as u128) << 64) | ((cy as u32 as u128) << 32) | k as u128)
        })
        .collect();
    let Some(mut packed) = packed else {
        entries.sort_unstable();
        return;
    };
    packed.sort_unstable();
    entries.clear();
    entries.extend(packed.into_iter().map(|e| {
        (
            i64::from((e >> 64) as u32 as i32),
            i64::from((e >> 32) as u32 as i32),
            e as u32,
        )
    }));
}

/// The entries ordered by cell in one counting pass, when the cells span a
/// rectangle of at most four cells per entry (a drawing laid out in rows
/// and columns: 75 by 480 cells for the 20,000-task model's ~40,000
/// entries); `None` for a sparse or far-flung drawing. Linear where a sort
/// is not: 15.8 M instructions of sorting on that model become ~1 M.
fn counting_sort(entries: &[(i64, i64, u32)]) -> Option<Vec<(i64, i64, u32)>> {
    let (x0, x1, y0, y1) = entries.iter().fold(
        (i64::MAX, i64::MIN, i64::MAX, i64::MIN),
        |(x0, x1, y0, y1), &(x, y, _)| (x0.min(x), x1.max(x), y0.min(y), y1.max(y)),
    );
    let width = i128::from(x1) - i128::from(x0) + 1;
    let height = i128::from(y1) - i128::from(y0) + 1;
    if entries.is_empty() || width * height > 4 * entries.len() as i128 + 1_024 {
        return None;
    }
    let (width, height) = (width as usize, height as usize);
    let cell = |&(x, y, _): &(i64, i64, u32)| (x - x0) as usize * height + (y - y0) as usize;
    // starts[c + 1] counts cell c's entries, then becomes where cell c + 1 begins.
    let mut starts = vec![0u32; width * height + 1];
    for e in entries {
        starts[cell(e) + 1] += 1;
    }
    for c in 0..width * height {
        starts[c + 1] += starts[c];
    }
    let mut out = vec![(0, 0, 0); entries.len()];
    for e in entries {
        let at = &mut starts[cell(e)];
        out[*at as usize] = *e;
        *at += 1;
    }
    Some(out)
}

/// Sweep along x: only shapes whose x-ranges meet are compared (for grids
/// no cell side suits).
fn sweep<T: Copy>(shapes: &mut [(T, &ShapeBounds)], mut found: impl FnMut(T, T)) {
    shapes.sort_by(|a, b| a.1.x.total_cmp(&b.1.x));
    for a in 0..shapes.len() {
        let (ia, ba) = shapes[a];
        for &(ib, bb) in &shapes[a + 1..] {
            if bb.x > ba.x + ba.width {
                break;
            }
            if collide(ba, bb) {
                found(ia, ib);
            }
        }
    }
}

fn attached(p: &Process, boundary: usize, host: usize) -> bool {
    matches!(&p.nodes[boundary].kind, NodeKind::BoundaryEvent { attached_to: Some(a), .. } if a.value == p.nodes[host].id())
}

fn collide(a: &ShapeBounds, b: &ShapeBounds) -> bool {
    a.x + a.width >= b.x && b.x + b.width >= a.x && a.y + a.height >= b.y && b.y + b.height >= a.y
}

/// A shape that is not placeable, or any shape in a parent that is not, is
/// outside (bpmnlint compares `NaN`, which is never within anything).
fn inside(child: &ShapeBounds, parent: &ShapeBounds) -> bool {
    child.finite
        && parent.finite
        && child.x >= parent.x
        && child.y >= parent.y
        && child.x + child.width <= parent.x + parent.width
        && child.y + child.height <= parent.y + parent.height
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A way to find the colliding pairs: the grid or the sweep.
    type Finder = fn(&mut [(usize, &ShapeBounds)], &mut dyn FnMut(usize, usize));

    /// Pairs found, each as (low, high), deduplicated.
    fn pairs(shapes: &[(usize, ShapeBounds)], find: Finder) -> Vec<(usize, usize)> {
        let mut refs: Vec<(usize, &ShapeBounds)> = shapes.iter().map(|(i, b)| (*i, b)).collect();
        let mut out = Vec::new();
        find(&mut refs, &mut |a, b| out.push((a.min(b), a.max(b))));
        out.sort_unstable();
        out.dedup();
        out
    }

    /// Each of the three ways of grouping (counting, packed sort, sort)
    /// keeps every entry and puts each cell's entries together.
    #[test]
    fn grouping_by_cell_keeps_every_entry_and_each_cell_together() {
        let dense: Vec<(i64, i64, u32)> = (0..500).map(|k| (k % 7 - 3, k % 11, k as u32)).collect();
        let sparse: Vec<(i64, i64, u32)> = (0..500)
            .map(|k| ((k % 7) * 100_000 - 5, -(k % 11) * 70_000, k as u32))
            .collect();
        let far: Vec<(i64, i64, u32)> = (0..500)
            .map(|k| ((k % 7) << 40, -((k % 11) << 36), k as u32))
            .collect();
        assert!(counting_sort(&dense).is_some());
        assert!(counting_sort(&sparse).is_none());
        assert!(i32::try_from(far[1].0).is_err());
        for entries in [dense, sparse, far] {
            let mut grouped = entries.clone();
            group_by_cell(&mut grouped);
            let mut cells: Vec<(i64, i64)> = grouped.iter().map(|&(x, y, _)| (x, y)).collect();
            cells.dedup();
            let mut distinct = cells.clone();
            distinct.sort_unstable();
            distinct.dedup();
            assert_eq!(cells.len(), distinct.len(), "a cell's entries are apart");
            let (mut a, mut b) = (grouped, entries);
            a.sort_unstable();
            b.sort_unstable();
            assert_eq!(a, b);
        }
    }

    /// The grid finds exactly the pairs the sweep along x finds, on layouts
    /// a modeller draws (rows and columns, touching edges), on piles, on
    /// huge and negative shapes.
    #[test]
    fn the_grid_finds_exactly_the_colliding_pairs() {
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = move |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        let shape = |x: f64, y: f64, width: f64, height: f64| ShapeBounds {
            diagram: 0,
            expanded: false,
            horizontal: true,
            finite: true,
            placed: true,
            x,
            y,
            width,
            height,
        };
        let mut cases: Vec<Vec<(usize, ShapeBounds)>> = Vec::new();
        // Rows of 50, the generated model's layout, with some shapes moved onto others.
        cases.push(
            (0..2_000)
                .map(|n| {
                    let (x, y) = (180 + (n % 50) * 150, 100 + (n / 50) * 120);
                    (n, shape(x as f64, y as f64, 100.0, 80.0))
                })
                .collect(),
        );
        // Touching edges collide.
        cases.push(
            (0..400)
                .map(|n| {
                    let (x, y) = ((n % 20) * 100, (n / 20) * 80);
                    (n, shape(x as f64, y as f64, 100.0, 80.0))
                })
                .collect(),
        );
        for k in 0..40 {
            let shapes = (0..(20 + k * 10))
                .map(|n| {
                    let scale = [1, 10, 1_000][(k % 3) as usize] as f64;
                    let w = match next(10) {
                        0 => -(next(50) as f64),
                        1 => 100_000.0,
                        2 => 0.0,
                        _ => next(120) as f64,
                    };
                    let h = if next(8) == 0 {
                        -(next(40) as f64)
                    } else {
                        next(90) as f64
                    };
                    let x = next(40) as f64 * scale / 4.0 - 50.0;
                    let y = next(40) as f64 * scale / 4.0;
                    (n as usize, shape(x, y, w, h))
                })
                .collect();
            cases.push(shapes);
        }
        // Cells beyond 32 bits (shapes a trillion units apart): the
        // entries are sorted unpacked.
        cases.push(
            (0..60)
                .map(|n| {
                    let far = if n % 3 == 0 { 1.0e12 } else { -3.0e11 };
                    let x = far + (n % 7) as f64 * 40.0;
                    (n, shape(x, (n % 5) as f64 * 30.0, 50.0, 40.0))
                })
                .collect(),
        );
        // Everything on one spot, and sides too small for a grid.
        cases.push((0..30).map(|n| (n, shape(5.0, 5.0, 10.0, 10.0))).collect());
        cases.push(
            (0..30)
                .map(|n| (n, shape(n as f64 * 0.25, 0.0, 0.1, 0.1)))
                .collect(),
        );
        let mut collisions = 0;
        for (k, shapes) in cases.iter().enumerate() {
            let grid = pairs(shapes, |s, f| colliding_pairs(s, f));
            let swept = pairs(shapes, |s, f| sweep(s, f));
            assert_eq!(grid, swept, "case {k}");
            collisions += grid.len();
        }
        assert!(
            collisions > 100,
            "the cases exercise collisions: {collisions}"
        );
    }
}
