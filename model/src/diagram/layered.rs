//! A layered (Sugiyama-style) layout, left to right, for models without a
//! diagram section.
//!
//! 1. Cycles are broken by a depth-first search from the nodes nothing
//!    flows into: a flow to a node still on the search's stack is a back
//!    flow (a loop), left out of the layering and routed below the rest.
//! 2. Longest-path layering: a node sits one layer right of its furthest
//!    predecessor. A boundary event's flows leave from its task's layer.
//! 3. Flows spanning several layers get a dummy vertex per layer between,
//!    so the crossing reduction sees them and their lines bend around nodes.
//! 4. Crossing reduction: barycentric sweeps down and up the layers, the
//!    order with the fewest crossings kept.
//! 5. Coordinates: a column per layer as wide as its widest node, rows of
//!    one height, each layer centred on the tallest.
//!
//! Written here rather than taken from a crate: the layout crates on
//! crates.io either draw ASCII only or lay out general graphs without
//! BPMN's constraints (boundary events riding on their task, loops routed
//! under the flow), and the whole algorithm is about 250 lines.

use std::collections::HashMap;

use super::{elbow, Diagram, Point, Rect};

/// Horizontal space between columns, vertical size of a row.
const GAP: f64 = 70.0;
const ROW: f64 = 140.0;
/// How far below the lowest node the first loop runs, and between loops.
const LOOP_DROP: f64 = 40.0;
const LOOP_STEP: f64 = 14.0;
/// Sweeps of the crossing reduction (each one down and one up).
const SWEEPS: usize = 6;

struct Graph {
    /// Per vertex (nodes first, then dummies): its layer.
    layer: Vec<usize>,
    /// Per vertex: neighbours in the layer before and after.
    preds: Vec<Vec<usize>>,
    succs: Vec<Vec<usize>>,
    /// Per flow: the vertices it passes, source first (forward flows only).
    chains: Vec<Vec<usize>>,
    back: Vec<bool>,
    /// Per vertex: a key for the first order (depth-first discovery).
    key: Vec<usize>,
}

pub(super) fn place(d: &mut Diagram) {
    let n = d.nodes.len();
    let index: HashMap<&str, usize> = d
        .nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (n.id.as_str(), i))
        .collect();
    // A boundary event is laid out with its task.
    let host: Vec<usize> = d
        .nodes
        .iter()
        .enumerate()
        .map(|(i, node)| {
            node.attached_to
                .as_deref()
                .and_then(|t| index.get(t).copied())
                .filter(|&t| d.nodes[t].attached_to.is_none())
                .unwrap_or(i)
        })
        .collect();
    let ends: Vec<(usize, usize)> = d
        .flows
        .iter()
        .map(|f| (index[f.source.as_str()], index[f.target.as_str()]))
        .collect();
    drop(index);
    let edges: Vec<(usize, usize)> = ends.iter().map(|&(s, t)| (host[s], host[t])).collect();
    let mut g = build(n, &host, &edges);
    let order = reduce_crossings(&mut g);
    let centers = coordinates(d, &g, &order, &host);
    for i in 0..n {
        if host[i] == i {
            let c = centers[i];
            let r = &mut d.nodes[i].rect;
            r.x = c.x - r.w / 2.0;
            r.y = c.y - r.h / 2.0;
        }
    }
    attach_boundaries(d, &host);
    route(d, &g, &centers, &host, &ends);
}

/// Cycle breaking, layering and dummy vertices.
fn build(n: usize, host: &[usize], edges: &[(usize, usize)]) -> Graph {
    let mut out: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut indegree = vec![0usize; n];
    for (e, &(s, t)) in edges.iter().enumerate() {
        out[s].push(e);
        indegree[t] += 1;
    }
    // Depth-first from the roots (nothing flows in), then whatever is left.
    let mut state = vec![0u8; n]; // 0 new, 1 on the stack, 2 done
    let mut back = vec![false; edges.len()];
    let mut key = vec![usize::MAX; n];
    let mut next_key = 0;
    let roots = (0..n)
        .filter(|&v| host[v] == v && indegree[v] == 0)
        .chain((0..n).filter(|&v| host[v] == v));
    for root in roots {
        if state[root] != 0 {
            continue;
        }
        let mut stack: Vec<(usize, usize)> = vec![(root, 0)];
        state[root] = 1;
        key[root] = next_key;
        next_key += 1;
        while let Some(&mut (v, ref mut i)) = stack.last_mut() {
            if let Some(&e) = out[v].get(*i) {
                *i += 1;
                let t = edges[e].1;
                match state[t] {
                    0 => {
                        state[t] = 1;
                        key[t] = next_key;
                        next_key += 1;
                        stack.push((t, 0));
                    }
                    1 => back[e] = true,
                    _ => {}
                }
            } else {
                state[v] = 2;
                stack.pop();
            }
        }
    }
    // Longest path over the forward flows, in topological order.
    let mut layer = vec![0usize; n];
    let mut remaining = vec![0usize; n];
    for (e, &(_, t)) in edges.iter().enumerate() {
        if !back[e] {
            remaining[t] += 1;
        }
    }
    let mut ready: Vec<usize> = (0..n)
        .filter(|&v| host[v] == v && remaining[v] == 0)
        .collect();
    while let Some(v) = ready.pop() {
        for &e in &out[v] {
            if back[e] {
                continue;
            }
            let t = edges[e].1;
            layer[t] = layer[t].max(layer[v] + 1);
            remaining[t] -= 1;
            if remaining[t] == 0 {
                ready.push(t);
            }
        }
    }
    let mut g = Graph {
        preds: vec![Vec::new(); n],
        succs: vec![Vec::new(); n],
        chains: Vec::with_capacity(edges.len()),
        layer,
        back,
        key,
    };
    for (e, &(s, t)) in edges.iter().enumerate() {
        if g.back[e] {
            g.chains.push(Vec::new());
            continue;
        }
        let mut chain = vec![s];
        for l in g.layer[s] + 1..g.layer[t] {
            let v = g.layer.len();
            g.layer.push(l);
            g.preds.push(Vec::new());
            g.succs.push(Vec::new());
            g.key.push(g.key[s]);
            chain.push(v);
        }
        chain.push(t);
        for w in chain.windows(2) {
            if w[0] != w[1] {
                g.succs[w[0]].push(w[1]);
                g.preds[w[1]].push(w[0]);
            }
        }
        g.chains.push(chain);
    }
    g
}

/// The vertices of each layer, in the order with the fewest crossings found.
fn reduce_crossings(g: &mut Graph) -> Vec<Vec<usize>> {
    let used = |v: usize| g.key[v] != usize::MAX;
    let layers = g.layer.iter().copied().max().map_or(0, |m| m + 1);
    let mut order: Vec<Vec<usize>> = vec![Vec::new(); layers];
    for v in (0..g.layer.len()).filter(|&v| used(v)) {
        order[g.layer[v]].push(v);
    }
    for l in &mut order {
        l.sort_by_key(|&v| g.key[v]);
    }
    let mut pos = vec![0usize; g.layer.len()];
    let index = |order: &Vec<Vec<usize>>, pos: &mut Vec<usize>| {
        for l in order {
            for (i, &v) in l.iter().enumerate() {
                pos[v] = i;
            }
        }
    };
    index(&order, &mut pos);
    let mut best = order.clone();
    let mut best_crossings = crossings(g, &order, &pos);
    for _ in 0..SWEEPS {
        for down in [true, false] {
            let ls: Vec<usize> = if down {
                (1..layers).collect()
            } else {
                (0..layers.saturating_sub(1)).rev().collect()
            };
            for l in ls {
                let mut keyed: Vec<(f64, usize)> = order[l]
                    .iter()
                    .map(|&v| {
                        let adj = if down { &g.preds[v] } else { &g.succs[v] };
                        let bary = if adj.is_empty() {
                            pos[v] as f64
                        } else {
                            adj.iter().map(|&u| pos[u] as f64).sum::<f64>() / adj.len() as f64
                        };
                        (bary, v)
                    })
                    .collect();
                keyed.sort_by(|a, b| a.0.total_cmp(&b.0));
                order[l] = keyed.into_iter().map(|(_, v)| v).collect();
                for (i, &v) in order[l].iter().enumerate() {
                    pos[v] = i;
                }
            }
            let c = crossings(g, &order, &pos);
            if c < best_crossings {
                best_crossings = c;
                best = order.clone();
            }
        }
    }
    best
}

/// Crossings between adjacent layers: pairs of segments whose ends are in
/// opposite orders.
fn crossings(g: &Graph, order: &[Vec<usize>], pos: &[usize]) -> usize {
    let mut total = 0;
    for l in order {
        let mut segs: Vec<(usize, usize)> = l
            .iter()
            .flat_map(|&u| g.succs[u].iter().map(move |&v| (pos[u], pos[v])))
            .collect();
        segs.sort_unstable();
        for i in 0..segs.len() {
            for j in i + 1..segs.len() {
                if segs[i].0 < segs[j].0 && segs[i].1 > segs[j].1 {
                    total += 1;
                }
            }
        }
    }
    total
}

/// The centre of every vertex: a column per layer, rows centred.
fn coordinates(d: &Diagram, g: &Graph, order: &[Vec<usize>], host: &[usize]) -> Vec<Point> {
    let n = d.nodes.len();
    let tallest = order.iter().map(Vec::len).max().unwrap_or(0) as f64;
    let mut centers = vec![Point { x: 0.0, y: 0.0 }; g.layer.len()];
    let mut x = 0.0;
    for l in order {
        let width = l
            .iter()
            .filter(|&&v| v < n && host[v] == v)
            .map(|&v| d.nodes[v].rect.w)
            .fold(0.0, f64::max);
        let offset = (tallest - l.len() as f64) / 2.0;
        for (i, &v) in l.iter().enumerate() {
            centers[v] = Point {
                x: x + width / 2.0,
                y: (i as f64 + offset) * ROW + ROW / 2.0,
            };
        }
        x += width + GAP;
    }
    centers
}

/// Boundary events sit on the bottom border of their task, spread along it.
fn attach_boundaries(d: &mut Diagram, host: &[usize]) {
    let mut count: HashMap<usize, usize> = HashMap::new();
    for (i, &h) in host.iter().enumerate() {
        if h != i {
            *count.entry(h).or_default() += 1;
        }
    }
    let mut seen: HashMap<usize, usize> = HashMap::new();
    for (i, &h) in host.iter().enumerate() {
        if h == i {
            continue;
        }
        let j = seen.entry(h).or_default();
        *j += 1;
        let task = d.nodes[h].rect;
        // From the right corner leftwards, a shape and a gap apart.
        let step = (task.w / (count[&h] + 1) as f64).max(d.nodes[i].rect.w + 8.0);
        let cx = task.right() - step * *j as f64;
        let r = &mut d.nodes[i].rect;
        *r = Rect {
            x: cx - r.w / 2.0,
            y: task.bottom() - r.h / 2.0,
            ..*r
        };
    }
}

fn route(d: &mut Diagram, g: &Graph, centers: &[Point], host: &[usize], ends: &[(usize, usize)]) {
    let rects: Vec<Rect> = d.nodes.iter().map(|n| n.rect).collect();
    let floor = rects.iter().map(Rect::bottom).fold(0.0, f64::max);
    let mut loops = 0;
    for (e, f) in d.flows.iter_mut().enumerate() {
        let (s, t) = ends[e];
        let (sr, tr) = (rects[s], rects[t]);
        let from_boundary = host[s] != s;
        let start = if from_boundary {
            Point {
                x: sr.center().x,
                y: sr.bottom(),
            }
        } else {
            Point {
                x: sr.right(),
                y: sr.center().y,
            }
        };
        let end = Point {
            x: tr.x,
            y: tr.center().y,
        };
        let mut pts = vec![start];
        if g.back[e] {
            let lane = floor + LOOP_DROP + loops as f64 * LOOP_STEP;
            loops += 1;
            if !from_boundary {
                pts.push(Point {
                    x: start.x + 15.0,
                    y: start.y,
                });
            }
            let x0 = pts.last().map_or(start.x, |p| p.x);
            pts.push(Point { x: x0, y: lane });
            pts.push(Point {
                x: end.x - 15.0,
                y: lane,
            });
            pts.push(Point {
                x: end.x - 15.0,
                y: end.y,
            });
            pts.push(end);
            f.back = true;
        } else {
            let chain = &g.chains[e];
            let mut targets: Vec<Point> = chain[1..chain.len() - 1]
                .iter()
                .map(|&v| centers[v])
                .collect();
            targets.push(end);
            if from_boundary {
                // Down off the task, then out past its right side.
                let first = targets[0];
                if first.y > start.y && first.x > rects[host[s]].right() {
                    pts.push(Point {
                        x: start.x,
                        y: first.y,
                    });
                } else {
                    let y = start.y + 20.0;
                    pts.push(Point { x: start.x, y });
                    pts.push(Point {
                        x: rects[host[s]].right() + GAP / 4.0,
                        y,
                    });
                }
            }
            for q in targets {
                let a = *pts.last().expect("starts with a point");
                elbow(&mut pts, a, q);
            }
        }
        f.points = pts;
    }
    apart(d, &rects);
}

/// Reroute every flow that shares a stretch of line with a flow it has no
/// end in common with ([`Diagram::shared_segments`]): it enters its target
/// from below (or above) instead of along the row, or its last climb moves
/// sideways, whichever first keeps clear of every other flow and of every
/// node but its own two.
fn apart(d: &mut Diagram, rects: &[Rect]) {
    let index: HashMap<String, usize> = d
        .nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (n.id.clone(), i))
        .collect();
    for (_, j) in d.shared_segments() {
        let f = &d.flows[j];
        if !clashes(d, j, &f.points) {
            // An earlier reroute already moved it clear.
            continue;
        }
        let (Some(&s), Some(&t)) = (index.get(&f.source), index.get(&f.target)) else {
            continue;
        };
        let chosen = variants(&f.points, rects[t]).into_iter().find(|pts| {
            !clashes(d, j, pts)
                && !pts.windows(2).any(|w| {
                    rects
                        .iter()
                        .enumerate()
                        .any(|(k, r)| k != s && k != t && crosses(w[0], w[1], *r))
                })
        });
        if let Some(pts) = chosen {
            d.flows[j].points = pts;
        }
    }
}

/// Whether flow `j` drawn along `pts` would share a stretch with a flow it
/// has no end in common with.
fn clashes(d: &Diagram, j: usize, pts: &[Point]) -> bool {
    let f = &d.flows[j];
    d.flows
        .iter()
        .enumerate()
        .any(|(i, g)| i != j && !super::may_share(f, g) && super::shares(pts, &g.points))
}

/// Other routes for an orthogonal flow ending in a run along the row of
/// its target: first the run kept at the height it comes from, entering
/// the target through its bottom (or top) edge; then the last climb moved
/// right or left in steps.
fn variants(pts: &[Point], target: Rect) -> Vec<Vec<Point>> {
    let n = pts.len();
    let mut out = Vec::new();
    if n < 3 {
        return out;
    }
    let (corner, climb, end) = (pts[n - 3], pts[n - 2], pts[n - 1]);
    let along_row = (climb.y - end.y).abs() < 0.5 && (corner.x - climb.x).abs() < 0.5;
    if !along_row {
        return out;
    }
    let cx = target.center().x;
    let edge = if corner.y > target.bottom() {
        Some(target.bottom())
    } else if corner.y < target.y {
        Some(target.y)
    } else {
        None
    };
    if let Some(edge) = edge {
        let mut v = pts[..n - 2].to_vec();
        v.push(Point { x: cx, y: corner.y });
        v.push(Point { x: cx, y: edge });
        out.push(simplify(v));
    }
    for k in [1.0, -1.0, 2.0, -2.0, 3.0, -3.0] {
        let x = climb.x + k * 12.0;
        if x >= end.x - 5.0 {
            continue;
        }
        let mut v = pts.to_vec();
        v[n - 3].x = x;
        v[n - 2].x = x;
        out.push(simplify(v));
    }
    out
}

/// Drop the points in the middle of a straight run.
fn simplify(pts: Vec<Point>) -> Vec<Point> {
    let mut out: Vec<Point> = Vec::with_capacity(pts.len());
    for p in pts {
        if let [.., a, b] = out.as_slice() {
            let flat = ((a.y - b.y).abs() < 0.5 && (b.y - p.y).abs() < 0.5)
                || ((a.x - b.x).abs() < 0.5 && (b.x - p.x).abs() < 0.5);
            if flat {
                out.pop();
            }
        }
        out.push(p);
    }
    out
}

/// Whether a segment passes through a rectangle's inside.
fn crosses(a: Point, b: Point, r: Rect) -> bool {
    let (x0, x1) = (a.x.min(b.x), a.x.max(b.x));
    let (y0, y1) = (a.y.min(b.y), a.y.max(b.y));
    x0 < r.right() - 0.5 && x1 > r.x + 0.5 && y0 < r.bottom() - 0.5 && y1 > r.y + 0.5
}
