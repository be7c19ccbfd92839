
using namespace System.Management.Automation
using namespace System.Management.Automation.Language

Register-ArgumentCompleter -Native -CommandName 'kubectl-sched' -ScriptBlock {
    param($wordToComplete, $commandAst, $cursorPosition)

    $commandElements = $commandAst.CommandElements
    $command = @(
        'kubectl-sched'
        for ($i = 1; $i -lt $commandElements.Count; $i++) {
            $element = $commandElements[$i]
            if ($element -isnot [StringConstantExpressionAst] -or
                $element.StringConstantType -ne [StringConstantType]::BareWord -or
                $element.Value.StartsWith('-') -or
                $element.Value -eq $wordToComplete) {
                break
        }
        $element.Value
    }) -join ';'

    $completions = @(switch ($command) {
        'kubectl-sched' {
            [CompletionResult]::new('--snapshot', '--snapshot', [CompletionResultType]::ParameterName, 'Read the cluster from a file, a directory of files, or - for stdin (YAML or JSON, .gz accepted) instead of the API server')
            [CompletionResult]::new('--kubeconfig', '--kubeconfig', [CompletionResultType]::ParameterName, 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'The kubeconfig context to use')
            [CompletionResult]::new('--cluster', '--cluster', [CompletionResultType]::ParameterName, 'The kubeconfig cluster to use')
            [CompletionResult]::new('--user', '--user', [CompletionResultType]::ParameterName, 'The kubeconfig user to use')
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'Namespace (default: the context''s namespace, else "default")')
            [CompletionResult]::new('--namespace', '--namespace', [CompletionResultType]::ParameterName, 'Namespace (default: the context''s namespace, else "default")')
            [CompletionResult]::new('--request-timeout', '--request-timeout', [CompletionResultType]::ParameterName, 'How long to wait for each API request (e.g. 10s, 1m; 0 waits forever)')
            [CompletionResult]::new('-o', '-o', [CompletionResultType]::ParameterName, 'Output format')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Output format')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colours (NO_COLOR in the environment also turns them off)')
            [CompletionResult]::new('--max-input-size', '--max-input-size', [CompletionResultType]::ParameterName, 'The most one input (--snapshot, -f) may hold once decompressed, e.g. 4Gi; the default is about 8 times the snapshot of a 5,000-node, 150,000-pod cluster')
            [CompletionResult]::new('--consistent-read', '--consistent-read', [CompletionResultType]::ParameterName, 'Read with a consistent (quorum) list from etcd instead of the API server''s watch cache')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'More detail on errors and warnings')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'More detail on errors and warnings')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('whatif', 'whatif', [CompletionResultType]::ParameterValue, 'Where would this pod go, and what would it evict? (kubectl sched-whatif)')
            [CompletionResult]::new('explain', 'explain', [CompletionResultType]::ParameterValue, 'Why is this pod pending, or why did it land where it did? (kubectl sched-explain)')
            [CompletionResult]::new('lease', 'lease', [CompletionResultType]::ParameterValue, 'Who holds each leader-election lease, and is it fresh? (kubectl sched-lease)')
            [CompletionResult]::new('snapshot', 'snapshot', [CompletionResultType]::ParameterValue, 'Save the cluster state this tool reads, for offline analysis')
            [CompletionResult]::new('completions', 'completions', [CompletionResultType]::ParameterValue, 'Print shell completions')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'kubectl-sched;whatif' {
            [CompletionResult]::new('-f', '-f', [CompletionResultType]::ParameterName, 'The pod to place, or a Deployment, ReplicaSet, StatefulSet, ReplicationController, Job, CronJob or DaemonSet whose pods to place; several documents are placed in order (YAML or JSON; - for stdin). Optional with a change such as --drain')
            [CompletionResult]::new('--filename', '--filename', [CompletionResultType]::ParameterName, 'The pod to place, or a Deployment, ReplicaSet, StatefulSet, ReplicationController, Job, CronJob or DaemonSet whose pods to place; several documents are placed in order (YAML or JSON; - for stdin). Optional with a change such as --drain')
            [CompletionResult]::new('--replicas', '--replicas', [CompletionResultType]::ParameterName, 'Place this many replicas one after another (default: a workload''s own replica count)')
            [CompletionResult]::new('--limit', '--limit', [CompletionResultType]::ParameterName, 'The most replicas --max or --replicas places: a node that takes any number of pods of this shape would otherwise be filled one by one')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'A KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1); default: the v1 defaults')
            [CompletionResult]::new('--scheduler-version', '--scheduler-version', [CompletionResultType]::ParameterName, 'The kube-scheduler release to model: 1.34, 1.35, 1.36, 1.37 or a patch release such as v1.36.2 (default: the API server''s version, or the one the snapshot recorded, else the newest modelled)')
            [CompletionResult]::new('--cordon', '--cordon', [CompletionResultType]::ParameterName, 'Cordon a node (spec.unschedulable and its NoSchedule taint)')
            [CompletionResult]::new('--uncordon', '--uncordon', [CompletionResultType]::ParameterName, 'Uncordon a node')
            [CompletionResult]::new('--delete-node', '--delete-node', [CompletionResultType]::ParameterName, 'Delete a node: controllers recreate its pods elsewhere (no PodDisruptionBudget is asked), bare pods are lost')
            [CompletionResult]::new('--taint', '--taint', [CompletionResultType]::ParameterName, 'Taint a node (kubectl taint syntax); a NoExecute taint evicts the pods that do not tolerate it')
            [CompletionResult]::new('--untaint', '--untaint', [CompletionResultType]::ParameterName, 'Remove a taint (every effect of the key without :EFFECT)')
            [CompletionResult]::new('--label', '--label', [CompletionResultType]::ParameterName, 'Label a node (KEY- removes the label)')
            [CompletionResult]::new('--add-node', '--add-node', [CompletionResultType]::ParameterName, 'Add the Node of a manifest, with the pods of the cluster''s DaemonSets that would run there')
            [CompletionResult]::new('--clone-node', '--clone-node', [CompletionResultType]::ParameterName, 'Add COUNT nodes like NODE (capacity, labels, taints, DaemonSet and static pods), named NODE-clone-1…')
            [CompletionResult]::new('--delete-pod', '--delete-pod', [CompletionResultType]::ParameterName, 'Delete a pod: its controller recreates it')
            [CompletionResult]::new('--drain', '--drain', [CompletionResultType]::ParameterName, 'Drain a node as kubectl drain --ignore-daemonsets would, after every other change: is it safe?')
            [CompletionResult]::new('--drain-timeout', '--drain-timeout', [CompletionResultType]::ParameterName, 'With --drain: give up on a node whose evictions a PodDisruptionBudget keeps refusing after this long, report it and go on with the next node (kubectl drain --timeout; 0, the default, retries for ever)')
            [CompletionResult]::new('--seed', '--seed', [CompletionResultType]::ParameterName, 'Break ties between equally good nodes at random, seeded, as kube-scheduler does (default: the first by name)')
            [CompletionResult]::new('--snapshot', '--snapshot', [CompletionResultType]::ParameterName, 'Read the cluster from a file, a directory of files, or - for stdin (YAML or JSON, .gz accepted) instead of the API server')
            [CompletionResult]::new('--kubeconfig', '--kubeconfig', [CompletionResultType]::ParameterName, 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'The kubeconfig context to use')
            [CompletionResult]::new('--cluster', '--cluster', [CompletionResultType]::ParameterName, 'The kubeconfig cluster to use')
            [CompletionResult]::new('--user', '--user', [CompletionResultType]::ParameterName, 'The kubeconfig user to use')
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'Namespace (default: the context''s namespace, else "default")')
            [CompletionResult]::new('--namespace', '--namespace', [CompletionResultType]::ParameterName, 'Namespace (default: the context''s namespace, else "default")')
            [CompletionResult]::new('--request-timeout', '--request-timeout', [CompletionResultType]::ParameterName, 'How long to wait for each API request (e.g. 10s, 1m; 0 waits forever)')
            [CompletionResult]::new('-o', '-o', [CompletionResultType]::ParameterName, 'Output format')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Output format')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colours (NO_COLOR in the environment also turns them off)')
            [CompletionResult]::new('--max-input-size', '--max-input-size', [CompletionResultType]::ParameterName, 'The most one input (--snapshot, -f) may hold once decompressed, e.g. 4Gi; the default is about 8 times the snapshot of a 5,000-node, 150,000-pod cluster')
            [CompletionResult]::new('--max', '--max', [CompletionResultType]::ParameterName, 'Place replicas until one fits nowhere: how many more fit?')
            [CompletionResult]::new('--call-extenders', '--call-extenders', [CompletionResultType]::ParameterName, 'Call the scheduler extenders of --config (their filter, prioritize and preempt verbs, never bind), sending them the pod and the nodes; without it they are listed but not called, and kube-scheduler''s answer may differ')
            [CompletionResult]::new('--serial', '--serial', [CompletionResultType]::ParameterName, 'Filter and score nodes on one thread (results are identical; for comparison)')
            [CompletionResult]::new('--force', '--force', [CompletionResultType]::ParameterName, 'With --drain: delete pods that declare no controller (kubectl drain --force); nothing recreates them')
            [CompletionResult]::new('--delete-emptydir-data', '--delete-emptydir-data', [CompletionResultType]::ParameterName, 'With --drain: evict pods with emptyDir volumes (their data is lost)')
            [CompletionResult]::new('--consistent-read', '--consistent-read', [CompletionResultType]::ParameterName, 'Read with a consistent (quorum) list from etcd instead of the API server''s watch cache')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'More detail on errors and warnings')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'More detail on errors and warnings')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'kubectl-sched;explain' {
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'A KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1); default: the v1 defaults')
            [CompletionResult]::new('--scheduler-version', '--scheduler-version', [CompletionResultType]::ParameterName, 'The kube-scheduler release to model: 1.34, 1.35, 1.36, 1.37 or a patch release such as v1.36.2 (default: the API server''s version, or the one the snapshot recorded, else the newest modelled)')
            [CompletionResult]::new('--cordon', '--cordon', [CompletionResultType]::ParameterName, 'Cordon a node (spec.unschedulable and its NoSchedule taint)')
            [CompletionResult]::new('--uncordon', '--uncordon', [CompletionResultType]::ParameterName, 'Uncordon a node')
            [CompletionResult]::new('--delete-node', '--delete-node', [CompletionResultType]::ParameterName, 'Delete a node: controllers recreate its pods elsewhere (no PodDisruptionBudget is asked), bare pods are lost')
            [CompletionResult]::new('--taint', '--taint', [CompletionResultType]::ParameterName, 'Taint a node (kubectl taint syntax); a NoExecute taint evicts the pods that do not tolerate it')
            [CompletionResult]::new('--untaint', '--untaint', [CompletionResultType]::ParameterName, 'Remove a taint (every effect of the key without :EFFECT)')
            [CompletionResult]::new('--label', '--label', [CompletionResultType]::ParameterName, 'Label a node (KEY- removes the label)')
            [CompletionResult]::new('--add-node', '--add-node', [CompletionResultType]::ParameterName, 'Add the Node of a manifest, with the pods of the cluster''s DaemonSets that would run there')
            [CompletionResult]::new('--clone-node', '--clone-node', [CompletionResultType]::ParameterName, 'Add COUNT nodes like NODE (capacity, labels, taints, DaemonSet and static pods), named NODE-clone-1…')
            [CompletionResult]::new('--delete-pod', '--delete-pod', [CompletionResultType]::ParameterName, 'Delete a pod: its controller recreates it')
            [CompletionResult]::new('--drain', '--drain', [CompletionResultType]::ParameterName, 'Drain a node as kubectl drain --ignore-daemonsets would, after every other change: is it safe?')
            [CompletionResult]::new('--drain-timeout', '--drain-timeout', [CompletionResultType]::ParameterName, 'With --drain: give up on a node whose evictions a PodDisruptionBudget keeps refusing after this long, report it and go on with the next node (kubectl drain --timeout; 0, the default, retries for ever)')
            [CompletionResult]::new('--seed', '--seed', [CompletionResultType]::ParameterName, 'Break ties between equally good nodes at random, seeded, as kube-scheduler does (default: the first by name)')
            [CompletionResult]::new('--snapshot', '--snapshot', [CompletionResultType]::ParameterName, 'Read the cluster from a file, a directory of files, or - for stdin (YAML or JSON, .gz accepted) instead of the API server')
            [CompletionResult]::new('--kubeconfig', '--kubeconfig', [CompletionResultType]::ParameterName, 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'The kubeconfig context to use')
            [CompletionResult]::new('--cluster', '--cluster', [CompletionResultType]::ParameterName, 'The kubeconfig cluster to use')
            [CompletionResult]::new('--user', '--user', [CompletionResultType]::ParameterName, 'The kubeconfig user to use')
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'Namespace (default: the context''s namespace, else "default")')
            [CompletionResult]::new('--namespace', '--namespace', [CompletionResultType]::ParameterName, 'Namespace (default: the context''s namespace, else "default")')
            [CompletionResult]::new('--request-timeout', '--request-timeout', [CompletionResultType]::ParameterName, 'How long to wait for each API request (e.g. 10s, 1m; 0 waits forever)')
            [CompletionResult]::new('-o', '-o', [CompletionResultType]::ParameterName, 'Output format')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Output format')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colours (NO_COLOR in the environment also turns them off)')
            [CompletionResult]::new('--max-input-size', '--max-input-size', [CompletionResultType]::ParameterName, 'The most one input (--snapshot, -f) may hold once decompressed, e.g. 4Gi; the default is about 8 times the snapshot of a 5,000-node, 150,000-pod cluster')
            [CompletionResult]::new('-A', '-A ', [CompletionResultType]::ParameterName, 'Explain every pending pod in every namespace, one line each')
            [CompletionResult]::new('--all-namespaces', '--all-namespaces', [CompletionResultType]::ParameterName, 'Explain every pending pod in every namespace, one line each')
            [CompletionResult]::new('--all-pending', '--all-pending', [CompletionResultType]::ParameterName, 'Explain every pending pod (in -n''s namespace if given, else in all), one line each')
            [CompletionResult]::new('--call-extenders', '--call-extenders', [CompletionResultType]::ParameterName, 'Call the scheduler extenders of --config (their filter, prioritize and preempt verbs, never bind), sending them the pod and the nodes; without it they are listed but not called, and kube-scheduler''s answer may differ')
            [CompletionResult]::new('--serial', '--serial', [CompletionResultType]::ParameterName, 'Filter and score nodes on one thread (results are identical; for comparison)')
            [CompletionResult]::new('--force', '--force', [CompletionResultType]::ParameterName, 'With --drain: delete pods that declare no controller (kubectl drain --force); nothing recreates them')
            [CompletionResult]::new('--delete-emptydir-data', '--delete-emptydir-data', [CompletionResultType]::ParameterName, 'With --drain: evict pods with emptyDir volumes (their data is lost)')
            [CompletionResult]::new('--consistent-read', '--consistent-read', [CompletionResultType]::ParameterName, 'Read with a consistent (quorum) list from etcd instead of the API server''s watch cache')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'More detail on errors and warnings')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'More detail on errors and warnings')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'kubectl-sched;lease' {
            [CompletionResult]::new('--renew-deadline', '--renew-deadline', [CompletionResultType]::ParameterName, 'The components'' renewDeadline: how long a leader keeps trying to renew before it gives up')
            [CompletionResult]::new('--retry-period', '--retry-period', [CompletionResultType]::ParameterName, 'The components'' retryPeriod: how often leaders renew and standbys try to acquire')
            [CompletionResult]::new('--node-grace-period', '--node-grace-period', [CompletionResultType]::ParameterName, 'kube-controller-manager''s --node-monitor-grace-period, for --nodes')
            [CompletionResult]::new('--snapshot', '--snapshot', [CompletionResultType]::ParameterName, 'Read the cluster from a file, a directory of files, or - for stdin (YAML or JSON, .gz accepted) instead of the API server')
            [CompletionResult]::new('--kubeconfig', '--kubeconfig', [CompletionResultType]::ParameterName, 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'The kubeconfig context to use')
            [CompletionResult]::new('--cluster', '--cluster', [CompletionResultType]::ParameterName, 'The kubeconfig cluster to use')
            [CompletionResult]::new('--user', '--user', [CompletionResultType]::ParameterName, 'The kubeconfig user to use')
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'Namespace (default: the context''s namespace, else "default")')
            [CompletionResult]::new('--namespace', '--namespace', [CompletionResultType]::ParameterName, 'Namespace (default: the context''s namespace, else "default")')
            [CompletionResult]::new('--request-timeout', '--request-timeout', [CompletionResultType]::ParameterName, 'How long to wait for each API request (e.g. 10s, 1m; 0 waits forever)')
            [CompletionResult]::new('-o', '-o', [CompletionResultType]::ParameterName, 'Output format')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Output format')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colours (NO_COLOR in the environment also turns them off)')
            [CompletionResult]::new('--max-input-size', '--max-input-size', [CompletionResultType]::ParameterName, 'The most one input (--snapshot, -f) may hold once decompressed, e.g. 4Gi; the default is about 8 times the snapshot of a 5,000-node, 150,000-pod cluster')
            [CompletionResult]::new('-A', '-A ', [CompletionResultType]::ParameterName, 'Every namespace (the default unless -n is given)')
            [CompletionResult]::new('--all-namespaces', '--all-namespaces', [CompletionResultType]::ParameterName, 'Every namespace (the default unless -n is given)')
            [CompletionResult]::new('--nodes', '--nodes', [CompletionResultType]::ParameterName, 'Node heartbeat leases: kubelets that stopped renewing, stalest first')
            [CompletionResult]::new('-w', '-w', [CompletionResultType]::ParameterName, 'Stream changes as an incident timeline until interrupted')
            [CompletionResult]::new('--watch', '--watch', [CompletionResultType]::ParameterName, 'Stream changes as an incident timeline until interrupted')
            [CompletionResult]::new('--renewals', '--renewals', [CompletionResultType]::ParameterName, 'With --watch, also print every renewal')
            [CompletionResult]::new('--consistent-read', '--consistent-read', [CompletionResultType]::ParameterName, 'Read with a consistent (quorum) list from etcd instead of the API server''s watch cache')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'More detail on errors and warnings')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'More detail on errors and warnings')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'kubectl-sched;snapshot' {
            [CompletionResult]::new('-f', '-f', [CompletionResultType]::ParameterName, 'Where to write: .json or .yaml by extension, .gz to compress')
            [CompletionResult]::new('--file', '--file', [CompletionResultType]::ParameterName, 'Where to write: .json or .yaml by extension, .gz to compress')
            [CompletionResult]::new('--snapshot', '--snapshot', [CompletionResultType]::ParameterName, 'Read the cluster from a file, a directory of files, or - for stdin (YAML or JSON, .gz accepted) instead of the API server')
            [CompletionResult]::new('--kubeconfig', '--kubeconfig', [CompletionResultType]::ParameterName, 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'The kubeconfig context to use')
            [CompletionResult]::new('--cluster', '--cluster', [CompletionResultType]::ParameterName, 'The kubeconfig cluster to use')
            [CompletionResult]::new('--user', '--user', [CompletionResultType]::ParameterName, 'The kubeconfig user to use')
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'Namespace (default: the context''s namespace, else "default")')
            [CompletionResult]::new('--namespace', '--namespace', [CompletionResultType]::ParameterName, 'Namespace (default: the context''s namespace, else "default")')
            [CompletionResult]::new('--request-timeout', '--request-timeout', [CompletionResultType]::ParameterName, 'How long to wait for each API request (e.g. 10s, 1m; 0 waits forever)')
            [CompletionResult]::new('-o', '-o', [CompletionResultType]::ParameterName, 'Output format')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Output format')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colours (NO_COLOR in the environment also turns them off)')
            [CompletionResult]::new('--max-input-size', '--max-input-size', [CompletionResultType]::ParameterName, 'The most one input (--snapshot, -f) may hold once decompressed, e.g. 4Gi; the default is about 8 times the snapshot of a 5,000-node, 150,000-pod cluster')
            [CompletionResult]::new('--no-redact', '--no-redact', [CompletionResultType]::ParameterName, 'Keep env values, large annotations and managedFields')
            [CompletionResult]::new('--consistent-read', '--consistent-read', [CompletionResultType]::ParameterName, 'Read with a consistent (quorum) list from etcd instead of the API server''s watch cache')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'More detail on errors and warnings')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'More detail on errors and warnings')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'kubectl-sched;completions' {
            [CompletionResult]::new('--snapshot', '--snapshot', [CompletionResultType]::ParameterName, 'Read the cluster from a file, a directory of files, or - for stdin (YAML or JSON, .gz accepted) instead of the API server')
            [CompletionResult]::new('--kubeconfig', '--kubeconfig', [CompletionResultType]::ParameterName, 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'The kubeconfig context to use')
            [CompletionResult]::new('--cluster', '--cluster', [CompletionResultType]::ParameterName, 'The kubeconfig cluster to use')
            [CompletionResult]::new('--user', '--user', [CompletionResultType]::ParameterName, 'The kubeconfig user to use')
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'Namespace (default: the context''s namespace, else "default")')
            [CompletionResult]::new('--namespace', '--namespace', [CompletionResultType]::ParameterName, 'Namespace (default: the context''s namespace, else "default")')
            [CompletionResult]::new('--request-timeout', '--request-timeout', [CompletionResultType]::ParameterName, 'How long to wait for each API request (e.g. 10s, 1m; 0 waits forever)')
            [CompletionResult]::new('-o', '-o', [CompletionResultType]::ParameterName, 'Output format')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Output format')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colours (NO_COLOR in the environment also turns them off)')
            [CompletionResult]::new('--max-input-size', '--max-input-size', [CompletionResultType]::ParameterName, 'The most one input (--snapshot, -f) may hold once decompressed, e.g. 4Gi; the default is about 8 times the snapshot of a 5,000-node, 150,000-pod cluster')
            [CompletionResult]::new('--consistent-read', '--consistent-read', [CompletionResultType]::ParameterName, 'Read with a consistent (quorum) list from etcd instead of the API server''s watch cache')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'More detail on errors and warnings')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'More detail on errors and warnings')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'kubectl-sched;help' {
            [CompletionResult]::new('whatif', 'whatif', [CompletionResultType]::ParameterValue, 'Where would this pod go, and what would it evict? (kubectl sched-whatif)')
            [CompletionResult]::new('explain', 'explain', [CompletionResultType]::ParameterValue, 'Why is this pod pending, or why did it land where it did? (kubectl sched-explain)')
            [CompletionResult]::new('lease', 'lease', [CompletionResultType]::ParameterValue, 'Who holds each leader-election lease, and is it fresh? (kubectl sched-lease)')
            [CompletionResult]::new('snapshot', 'snapshot', [CompletionResultType]::ParameterValue, 'Save the cluster state this tool reads, for offline analysis')
            [CompletionResult]::new('completions', 'completions', [CompletionResultType]::ParameterValue, 'Print shell completions')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'kubectl-sched;help;whatif' {
            break
        }
        'kubectl-sched;help;explain' {
            break
        }
        'kubectl-sched;help;lease' {
            break
        }
        'kubectl-sched;help;snapshot' {
            break
        }
        'kubectl-sched;help;completions' {
            break
        }
        'kubectl-sched;help;help' {
            break
        }
    })

    $completions.Where{ $_.CompletionText -like "$wordToComplete*" } |
        Sort-Object -Property ListItemText
}
