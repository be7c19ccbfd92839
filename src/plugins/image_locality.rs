//! ImageLocality (Score): favours nodes that already have the pod's images, scaled by how widely
//! each image is spread over the cluster.

use crate::framework::cycle_state::CycleState;
use crate::framework::plugin::{Cx, Plugin, Points, Reuse};
use crate::framework::runner::MAX_NODE_SCORE;
use crate::framework::status::Status;
use crate::model::node_info::NodeInfo;

pub const NAME: &str = "ImageLocality";

const MB: i64 = 1024 * 1024;
const MIN_THRESHOLD: i64 = 23 * MB;
const MAX_CONTAINER_THRESHOLD: i64 = 1000 * MB;

pub struct ImageLocality;

impl Plugin for ImageLocality {
    fn name(&self) -> &'static str {
        NAME
    }

    fn points(&self) -> Points {
        Points::SCORE
    }

    fn score(&self, cx: &Cx, _state: &CycleState, node: &NodeInfo) -> Result<i64, Status> {
        let total_nodes = cx.snapshot.num_nodes();
        let sum: i64 = cx
            .pod
            .images
            .iter()
            .filter_map(|img| node.image_states.get(img))
            .map(|state| {
                let spread = state.num_nodes as f64 / total_nodes as f64;
                (state.size as f64 * spread) as i64
            })
            .sum();
        Ok(calculate_priority(sum, cx.pod.num_containers))
    }

    fn reuse(&self) -> Reuse {
        Reuse::NODE_LOCAL
    }
}

fn calculate_priority(sum: i64, num_containers: usize) -> i64 {
    let max_threshold = MAX_CONTAINER_THRESHOLD * num_containers as i64;
    let sum = if sum < MIN_THRESHOLD {
        MIN_THRESHOLD
    } else if sum > max_threshold {
        max_threshold
    } else {
        sum
    };
    MAX_NODE_SCORE * (sum - MIN_THRESHOLD) / (max_threshold - MIN_THRESHOLD)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thresholds() {
        assert_eq!(calculate_priority(0, 1), 0);
        assert_eq!(calculate_priority(1000 * MB, 1), 100);
        assert_eq!(calculate_priority(511 * MB + MB / 2, 1), 50);
    }
}
