//! Storage capacity scoring (`scorer.go`): a node scores by how much of each storage class's
//! capacity the pod's volumes would leave free there.

use super::*;

/// `VolumeBindingArgs`, as far as scoring reads them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Args {
    /// Score by utilisation of each class's capacity, in node-score units.
    pub shape: Vec<ShapePoint>,
}

impl Default for Args {
    /// The v1 default: the emptier the better.
    fn default() -> Self {
        Args {
            shape: vec![
                ShapePoint {
                    utilization: 0,
                    score: MAX_NODE_SCORE,
                },
                ShapePoint {
                    utilization: 100,
                    score: 0,
                },
            ],
        }
    }
}

/// `buildScorerFunction`: each class scored by its utilisation, the node by their rounded mean.
pub(super) fn capacity_score(shape: &[ShapePoint], usage: &HashMap<&str, (i64, i64)>) -> i64 {
    if usage.is_empty() {
        return 0;
    }
    let sum: i64 = usage
        .values()
        .map(|&(requested, capacity)| {
            let utilization = if capacity == 0 || requested > capacity {
                100
            } else {
                requested * 100 / capacity
            };
            broken_linear(shape, utilization)
        })
        .sum();
    (sum as f64 / usage.len() as f64).round() as i64
}
