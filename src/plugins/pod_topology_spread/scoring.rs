//! Scoring (`scoring.go`): PreScore counts the pods each ScheduleAnyway constraint matches per
//! domain of the feasible nodes; Score weighs a node's domains by them; NormalizeScore turns
//! fewer matching pods into a higher score.

use super::*;

#[derive(Debug)]
pub(super) struct PreScoreData {
    pub(super) constraints: Vec<Constraint>,
    /// Nodes missing a topology key when every key is required: scored 0.
    pub(super) ignored: FxHashSet<Str>,
    /// The nodes PreScore was given, in the order NormalizeScore receives their scores.
    pub(super) nodes: Vec<Str>,
    /// Per constraint (hostname ones stay empty): matching pods per domain of the feasible nodes.
    pub(super) counts: Vec<FxHashMap<Str, i64>>,
    /// Per constraint: `ln(domains + 2)`, so that small topologies weigh more per pod.
    pub(super) weights: Vec<f64>,
}

/// What Score reads; shared, not copied, by copies of the cycle state, as upstream.
#[derive(Clone, Debug)]
pub struct PreScoreState(pub(super) Arc<PreScoreData>);

impl PodTopologySpread {
    pub(super) fn pre_score_state(
        &self,
        cx: &Cx,
        state: &mut CycleState,
        nodes: &[&NodeInfo],
    ) -> Status {
        let all = &cx.snapshot.nodes;
        if all.is_empty() {
            return Status::skip();
        }
        let pod = cx.pod;
        // Only the system defaults let nodes without every key count (hostname spreading still
        // works on nodes without a zone label).
        let require_all = !pod.topology_spread_constraints.is_empty() || !self.system_defaulted;
        let constraints = match self.constraints(pod, &cx.snapshot.cluster, Action::ScheduleAnyway)
        {
            Ok(c) if c.is_empty() => return Status::skip(),
            Ok(c) => c,
            Err(e) => return Status::error(format!("calculating preScoreState: {e}")),
        };
        let mut ignored = FxHashSet::default();
        let mut counts: Vec<FxHashMap<Str, i64>> = vec![FxHashMap::default(); constraints.len()];
        for node in nodes {
            let labels = &node.node.labels;
            if require_all && !has_all_keys(labels, &constraints) {
                ignored.insert(node.name());
                continue;
            }
            for (c, counts) in constraints.iter().zip(counts.iter_mut()) {
                if !c.hostname {
                    counts
                        .entry(labels.get(c.topology_key).unwrap_or_default())
                        .or_insert(0);
                }
            }
        }
        let weights = constraints
            .iter()
            .zip(&counts)
            .map(|(c, counts)| {
                let size = if c.hostname {
                    nodes.len() - ignored.len()
                } else {
                    counts.len()
                };
                go_log((size + 2) as f64)
            })
            .collect();
        // Hostname domains are never in `counts`: Score counts those on the node itself.
        let per_node =
            count_matching_pods(cx.snapshot, &constraints, pod.namespace, |node, slots| {
                let labels = &node.node.labels;
                if require_all && !has_all_keys(labels, &constraints) {
                    slots.fill(EXCLUDED);
                    return;
                }
                let mut inclusion = Inclusion::new(pod, &node.node);
                for ((slot, c), counts) in slots.iter_mut().zip(&constraints).zip(&counts) {
                    let domain = labels.get(c.topology_key).unwrap_or_default();
                    if !counts.contains_key(&domain) || !inclusion.includes(c) {
                        *slot = EXCLUDED;
                    }
                }
            });
        for (node, slots) in all.iter().zip(per_node.chunks(constraints.len())) {
            for ((&n, c), counts) in slots.iter().zip(&constraints).zip(counts.iter_mut()) {
                if n != EXCLUDED
                    && let Some(total) =
                        counts.get_mut(&node.node.labels.get(c.topology_key).unwrap_or_default())
                {
                    *total += n;
                }
            }
        }
        state.write(
            self.pre_score,
            PreScoreState(Arc::new(PreScoreData {
                constraints,
                ignored,
                nodes: nodes.iter().map(|n| n.name()).collect(),
                counts,
                weights,
            })),
        );
        Status::success()
    }

    pub(super) fn score_node(
        &self,
        cx: &Cx,
        state: &CycleState,
        node: &NodeInfo,
    ) -> Result<i64, Status> {
        let s = self.pre_score_data(state)?;
        let score: f64 = counted_domains(s, cx, node)
            .map(|(c, _, count, weight)| count as f64 * weight + f64::from(c.max_skew - 1))
            .sum();
        Ok(score.round() as i64)
    }

    pub(super) fn score_node_inputs(
        &self,
        cx: &Cx,
        state: &CycleState,
        node: &NodeInfo,
    ) -> Vec<ScoreInput> {
        let Ok(s) = self.pre_score_data(state) else {
            return Vec::new();
        };
        counted_domains(s, cx, node)
            .map(|(c, domain, matching, weight)| ScoreInput::Spread {
                topology_key: c.topology_key,
                domain,
                matching,
                weight,
            })
            .collect()
    }

    fn pre_score_data<'a>(&self, state: &'a CycleState) -> Result<&'a PreScoreData, Status> {
        match state.read(self.pre_score) {
            Some(PreScoreState(s)) => Ok(s),
            None => Err(Status::error(format!(
                "error reading \"PreScore{NAME}\" from cycleState: not found"
            ))),
        }
    }

    pub(super) fn normalize_node_scores(
        &self,
        _cx: &Cx,
        state: &CycleState,
        scores: &mut [i64],
    ) -> Status {
        let Some(PreScoreState(s)) = state.read(self.pre_score) else {
            return Status::error(format!(
                "error reading \"PreScore{NAME}\" from cycleState: not found"
            ));
        };
        let ignored = |i: usize| s.nodes.get(i).is_some_and(|name| s.ignored.contains(name));
        let mut min = i64::MAX;
        let mut max = 0;
        for (i, &score) in scores.iter().enumerate() {
            if !ignored(i) {
                min = min.min(score);
                max = max.max(score);
            }
        }
        for (i, score) in scores.iter_mut().enumerate() {
            *score = if ignored(i) {
                0
            } else if max == 0 {
                MAX_NODE_SCORE
            } else {
                MAX_NODE_SCORE * (max + min - *score) / max
            };
        }
        Status::success()
    }
}

/// Per ScheduleAnyway constraint whose key the node has (none on an ignored node): the node's
/// domain, the matching pods Score counts there, and the constraint's weight.
fn counted_domains<'a>(
    s: &'a PreScoreData,
    cx: &'a Cx,
    node: &'a NodeInfo,
) -> impl Iterator<Item = (&'a Constraint, Str, i64, f64)> + 'a {
    let ignored = s.ignored.contains(&node.name());
    let labels = &node.node.labels;
    s.constraints
        .iter()
        .enumerate()
        .filter(move |_| !ignored)
        .filter_map(move |(i, c)| {
            let domain = labels.get(c.topology_key)?;
            let count = if c.hostname {
                node.pods
                    .iter()
                    .filter(|p| counted(p, cx.pod.namespace, &c.selector))
                    .count() as i64
            } else {
                s.counts[i].get(&domain).copied().unwrap_or(0)
            };
            Some((c, domain, count, s.weights[i]))
        })
}

/// `math.Log` as Go computes it on amd64 (the fdlibm reduction and polynomial, operation by
/// operation, without fused multiply-adds), so the normalizing weight, and through it every
/// rounded score, is bit for bit upstream's. Only called with finite numbers >= 2.
pub(super) fn go_log(x: f64) -> f64 {
    let ln2_hi = f64::from_bits(0x3fe6_2e42_fee0_0000);
    let ln2_lo = f64::from_bits(0x3dea_39ef_3579_3c76);
    let l = [
        0x3FE5_5555_5555_5593u64,
        0x3FD9_9999_9997_FA04,
        0x3FD2_4924_9422_9359,
        0x3FCC_71C5_1D8E_78AF,
        0x3FC7_4664_96CB_03DE,
        0x3FC3_9A09_D078_C69F,
        0x3FC2_F112_DF3E_5244,
    ]
    .map(f64::from_bits);
    let bits = x.to_bits();
    // frexp: x = f1 * 2^k with f1 in [0.5, 1).
    let mut f1 = f64::from_bits((bits & 0x000F_FFFF_FFFF_FFFF) | 0x3FE0_0000_0000_0000);
    let mut k = (((bits >> 52) & 0x7FF) as i64 - 0x3FE) as f64;
    if f1 <= std::f64::consts::FRAC_1_SQRT_2 {
        k -= 1.0;
        f1 *= 2.0;
    }
    let f = f1 - 1.0;
    let s = f / (2.0 + f);
    let s2 = s * s;
    let s4 = s2 * s2;
    let t1 = s2 * (l[0] + s4 * (l[2] + s4 * (l[4] + s4 * l[6])));
    let t2 = s4 * (l[1] + s4 * (l[3] + s4 * l[5]));
    let r = t1 + t2;
    let hfsq = 0.5 * f * f;
    k * ln2_hi - ((hfsq - (s * (hfsq + r) + k * ln2_lo)) - f)
}
