# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_kubectl_sched_global_optspecs
    string join \n snapshot= kubeconfig= context= cluster= user= n/namespace= request-timeout= consistent-read o/output= color= max-input-size= v/verbose h/help V/version
end

function __fish_kubectl_sched_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_kubectl_sched_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_kubectl_sched_using_subcommand
    set -l cmd (__fish_kubectl_sched_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c kubectl-sched -n "__fish_kubectl_sched_needs_command" -l snapshot -d 'Read the cluster from a file, a directory of files, or - for stdin (YAML or JSON, .gz accepted) instead of the API server' -r
complete -c kubectl-sched -n "__fish_kubectl_sched_needs_command" -l kubeconfig -d 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)' -r -F
complete -c kubectl-sched -n "__fish_kubectl_sched_needs_command" -l context -d 'The kubeconfig context to use' -r
complete -c kubectl-sched -n "__fish_kubectl_sched_needs_command" -l cluster -d 'The kubeconfig cluster to use' -r
complete -c kubectl-sched -n "__fish_kubectl_sched_needs_command" -l user -d 'The kubeconfig user to use' -r
complete -c kubectl-sched -n "__fish_kubectl_sched_needs_command" -s n -l namespace -d 'Namespace (default: the context\'s namespace, else "default")' -r
complete -c kubectl-sched -n "__fish_kubectl_sched_needs_command" -l request-timeout -d 'How long to wait for each API request (e.g. 10s, 1m; 0 waits forever)' -r
complete -c kubectl-sched -n "__fish_kubectl_sched_needs_command" -s o -l output -d 'Output format' -r -f -a "table\t'A table readable at 80 columns'
wide\t'The table with a column per score plugin'
json\t''
yaml\t''"
complete -c kubectl-sched -n "__fish_kubectl_sched_needs_command" -l color -d 'When to use colours (NO_COLOR in the environment also turns them off)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c kubectl-sched -n "__fish_kubectl_sched_needs_command" -l max-input-size -d 'The most one input (--snapshot, -f) may hold once decompressed, e.g. 4Gi; the default is about 8 times the snapshot of a 5,000-node, 150,000-pod cluster' -r
complete -c kubectl-sched -n "__fish_kubectl_sched_needs_command" -l consistent-read -d 'Read with a consistent (quorum) list from etcd instead of the API server\'s watch cache'
complete -c kubectl-sched -n "__fish_kubectl_sched_needs_command" -s v -l verbose -d 'More detail on errors and warnings'
complete -c kubectl-sched -n "__fish_kubectl_sched_needs_command" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c kubectl-sched -n "__fish_kubectl_sched_needs_command" -s V -l version -d 'Print version'
complete -c kubectl-sched -n "__fish_kubectl_sched_needs_command" -f -a "whatif" -d 'Where would this pod go, and what would it evict? (kubectl sched-whatif)'
complete -c kubectl-sched -n "__fish_kubectl_sched_needs_command" -f -a "explain" -d 'Why is this pod pending, or why did it land where it did? (kubectl sched-explain)'
complete -c kubectl-sched -n "__fish_kubectl_sched_needs_command" -f -a "lease" -d 'Who holds each leader-election lease, and is it fresh? (kubectl sched-lease)'
complete -c kubectl-sched -n "__fish_kubectl_sched_needs_command" -f -a "snapshot" -d 'Save the cluster state this tool reads, for offline analysis'
complete -c kubectl-sched -n "__fish_kubectl_sched_needs_command" -f -a "completions" -d 'Print shell completions'
complete -c kubectl-sched -n "__fish_kubectl_sched_needs_command" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand whatif" -s f -l filename -d 'The pod to place, or a Deployment, ReplicaSet, StatefulSet, ReplicationController, Job, CronJob or DaemonSet whose pods to place; several documents are placed in order (YAML or JSON; - for stdin). Optional with a change such as --drain' -r
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand whatif" -l replicas -d 'Place this many replicas one after another (default: a workload\'s own replica count)' -r
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand whatif" -l limit -d 'The most replicas --max or --replicas places: a node that takes any number of pods of this shape would otherwise be filled one by one' -r
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand whatif" -l config -d 'A KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1); default: the v1 defaults' -r -F
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand whatif" -l scheduler-version -d 'The kube-scheduler release to model: 1.34, 1.35, 1.36, 1.37 or a patch release such as v1.36.2 (default: the API server\'s version, or the one the snapshot recorded, else the newest modelled)' -r
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand whatif" -l cordon -d 'Cordon a node (spec.unschedulable and its NoSchedule taint)' -r
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand whatif" -l uncordon -d 'Uncordon a node' -r
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand whatif" -l delete-node -d 'Delete a node: controllers recreate its pods elsewhere (no PodDisruptionBudget is asked), bare pods are lost' -r
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand whatif" -l taint -d 'Taint a node (kubectl taint syntax); a NoExecute taint evicts the pods that do not tolerate it' -r
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand whatif" -l untaint -d 'Remove a taint (every effect of the key without :EFFECT)' -r
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand whatif" -l label -d 'Label a node (KEY- removes the label)' -r
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand whatif" -l add-node -d 'Add the Node of a manifest, with the pods of the cluster\'s DaemonSets that would run there' -r
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand whatif" -l clone-node -d 'Add COUNT nodes like NODE (capacity, labels, taints, DaemonSet and static pods), named NODE-clone-1…' -r
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand whatif" -l delete-pod -d 'Delete a pod: its controller recreates it' -r
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand whatif" -l drain -d 'Drain a node as kubectl drain --ignore-daemonsets would, after every other change: is it safe?' -r
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand whatif" -l drain-timeout -d 'With --drain: give up on a node whose evictions a PodDisruptionBudget keeps refusing after this long, report it and go on with the next node (kubectl drain --timeout; 0, the default, retries for ever)' -r
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand whatif" -l seed -d 'Break ties between equally good nodes at random, seeded, as kube-scheduler does (default: the first by name)' -r
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand whatif" -l snapshot -d 'Read the cluster from a file, a directory of files, or - for stdin (YAML or JSON, .gz accepted) instead of the API server' -r
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand whatif" -l kubeconfig -d 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)' -r -F
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand whatif" -l context -d 'The kubeconfig context to use' -r
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand whatif" -l cluster -d 'The kubeconfig cluster to use' -r
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand whatif" -l user -d 'The kubeconfig user to use' -r
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand whatif" -s n -l namespace -d 'Namespace (default: the context\'s namespace, else "default")' -r
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand whatif" -l request-timeout -d 'How long to wait for each API request (e.g. 10s, 1m; 0 waits forever)' -r
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand whatif" -s o -l output -d 'Output format' -r -f -a "table\t'A table readable at 80 columns'
wide\t'The table with a column per score plugin'
json\t''
yaml\t''"
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand whatif" -l color -d 'When to use colours (NO_COLOR in the environment also turns them off)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand whatif" -l max-input-size -d 'The most one input (--snapshot, -f) may hold once decompressed, e.g. 4Gi; the default is about 8 times the snapshot of a 5,000-node, 150,000-pod cluster' -r
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand whatif" -l max -d 'Place replicas until one fits nowhere: how many more fit?'
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand whatif" -l call-extenders -d 'Call the scheduler extenders of --config (their filter, prioritize and preempt verbs, never bind), sending them the pod and the nodes; without it they are listed but not called, and kube-scheduler\'s answer may differ'
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand whatif" -l serial -d 'Filter and score nodes on one thread (results are identical; for comparison)'
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand whatif" -l force -d 'With --drain: delete pods that declare no controller (kubectl drain --force); nothing recreates them'
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand whatif" -l delete-emptydir-data -d 'With --drain: evict pods with emptyDir volumes (their data is lost)'
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand whatif" -l consistent-read -d 'Read with a consistent (quorum) list from etcd instead of the API server\'s watch cache'
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand whatif" -s v -l verbose -d 'More detail on errors and warnings'
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand whatif" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand whatif" -s V -l version -d 'Print version'
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand explain" -l config -d 'A KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1); default: the v1 defaults' -r -F
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand explain" -l scheduler-version -d 'The kube-scheduler release to model: 1.34, 1.35, 1.36, 1.37 or a patch release such as v1.36.2 (default: the API server\'s version, or the one the snapshot recorded, else the newest modelled)' -r
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand explain" -l cordon -d 'Cordon a node (spec.unschedulable and its NoSchedule taint)' -r
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand explain" -l uncordon -d 'Uncordon a node' -r
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand explain" -l delete-node -d 'Delete a node: controllers recreate its pods elsewhere (no PodDisruptionBudget is asked), bare pods are lost' -r
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand explain" -l taint -d 'Taint a node (kubectl taint syntax); a NoExecute taint evicts the pods that do not tolerate it' -r
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand explain" -l untaint -d 'Remove a taint (every effect of the key without :EFFECT)' -r
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand explain" -l label -d 'Label a node (KEY- removes the label)' -r
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand explain" -l add-node -d 'Add the Node of a manifest, with the pods of the cluster\'s DaemonSets that would run there' -r
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand explain" -l clone-node -d 'Add COUNT nodes like NODE (capacity, labels, taints, DaemonSet and static pods), named NODE-clone-1…' -r
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand explain" -l delete-pod -d 'Delete a pod: its controller recreates it' -r
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand explain" -l drain -d 'Drain a node as kubectl drain --ignore-daemonsets would, after every other change: is it safe?' -r
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand explain" -l drain-timeout -d 'With --drain: give up on a node whose evictions a PodDisruptionBudget keeps refusing after this long, report it and go on with the next node (kubectl drain --timeout; 0, the default, retries for ever)' -r
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand explain" -l seed -d 'Break ties between equally good nodes at random, seeded, as kube-scheduler does (default: the first by name)' -r
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand explain" -l snapshot -d 'Read the cluster from a file, a directory of files, or - for stdin (YAML or JSON, .gz accepted) instead of the API server' -r
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand explain" -l kubeconfig -d 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)' -r -F
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand explain" -l context -d 'The kubeconfig context to use' -r
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand explain" -l cluster -d 'The kubeconfig cluster to use' -r
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand explain" -l user -d 'The kubeconfig user to use' -r
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand explain" -s n -l namespace -d 'Namespace (default: the context\'s namespace, else "default")' -r
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand explain" -l request-timeout -d 'How long to wait for each API request (e.g. 10s, 1m; 0 waits forever)' -r
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand explain" -s o -l output -d 'Output format' -r -f -a "table\t'A table readable at 80 columns'
wide\t'The table with a column per score plugin'
json\t''
yaml\t''"
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand explain" -l color -d 'When to use colours (NO_COLOR in the environment also turns them off)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand explain" -l max-input-size -d 'The most one input (--snapshot, -f) may hold once decompressed, e.g. 4Gi; the default is about 8 times the snapshot of a 5,000-node, 150,000-pod cluster' -r
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand explain" -s A -l all-namespaces -d 'Explain every pending pod in every namespace, one line each'
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand explain" -l all-pending -d 'Explain every pending pod (in -n\'s namespace if given, else in all), one line each'
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand explain" -l call-extenders -d 'Call the scheduler extenders of --config (their filter, prioritize and preempt verbs, never bind), sending them the pod and the nodes; without it they are listed but not called, and kube-scheduler\'s answer may differ'
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand explain" -l serial -d 'Filter and score nodes on one thread (results are identical; for comparison)'
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand explain" -l force -d 'With --drain: delete pods that declare no controller (kubectl drain --force); nothing recreates them'
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand explain" -l delete-emptydir-data -d 'With --drain: evict pods with emptyDir volumes (their data is lost)'
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand explain" -l consistent-read -d 'Read with a consistent (quorum) list from etcd instead of the API server\'s watch cache'
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand explain" -s v -l verbose -d 'More detail on errors and warnings'
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand explain" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand explain" -s V -l version -d 'Print version'
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand lease" -l renew-deadline -d 'The components\' renewDeadline: how long a leader keeps trying to renew before it gives up' -r
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand lease" -l retry-period -d 'The components\' retryPeriod: how often leaders renew and standbys try to acquire' -r
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand lease" -l node-grace-period -d 'kube-controller-manager\'s --node-monitor-grace-period, for --nodes' -r
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand lease" -l snapshot -d 'Read the cluster from a file, a directory of files, or - for stdin (YAML or JSON, .gz accepted) instead of the API server' -r
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand lease" -l kubeconfig -d 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)' -r -F
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand lease" -l context -d 'The kubeconfig context to use' -r
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand lease" -l cluster -d 'The kubeconfig cluster to use' -r
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand lease" -l user -d 'The kubeconfig user to use' -r
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand lease" -s n -l namespace -d 'Namespace (default: the context\'s namespace, else "default")' -r
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand lease" -l request-timeout -d 'How long to wait for each API request (e.g. 10s, 1m; 0 waits forever)' -r
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand lease" -s o -l output -d 'Output format' -r -f -a "table\t'A table readable at 80 columns'
wide\t'The table with a column per score plugin'
json\t''
yaml\t''"
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand lease" -l color -d 'When to use colours (NO_COLOR in the environment also turns them off)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand lease" -l max-input-size -d 'The most one input (--snapshot, -f) may hold once decompressed, e.g. 4Gi; the default is about 8 times the snapshot of a 5,000-node, 150,000-pod cluster' -r
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand lease" -s A -l all-namespaces -d 'Every namespace (the default unless -n is given)'
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand lease" -l nodes -d 'Node heartbeat leases: kubelets that stopped renewing, stalest first'
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand lease" -s w -l watch -d 'Stream changes as an incident timeline until interrupted'
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand lease" -l renewals -d 'With --watch, also print every renewal'
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand lease" -l consistent-read -d 'Read with a consistent (quorum) list from etcd instead of the API server\'s watch cache'
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand lease" -s v -l verbose -d 'More detail on errors and warnings'
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand lease" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand lease" -s V -l version -d 'Print version'
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand snapshot" -s f -l file -d 'Where to write: .json or .yaml by extension, .gz to compress' -r
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand snapshot" -l snapshot -d 'Read the cluster from a file, a directory of files, or - for stdin (YAML or JSON, .gz accepted) instead of the API server' -r
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand snapshot" -l kubeconfig -d 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)' -r -F
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand snapshot" -l context -d 'The kubeconfig context to use' -r
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand snapshot" -l cluster -d 'The kubeconfig cluster to use' -r
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand snapshot" -l user -d 'The kubeconfig user to use' -r
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand snapshot" -s n -l namespace -d 'Namespace (default: the context\'s namespace, else "default")' -r
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand snapshot" -l request-timeout -d 'How long to wait for each API request (e.g. 10s, 1m; 0 waits forever)' -r
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand snapshot" -s o -l output -d 'Output format' -r -f -a "table\t'A table readable at 80 columns'
wide\t'The table with a column per score plugin'
json\t''
yaml\t''"
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand snapshot" -l color -d 'When to use colours (NO_COLOR in the environment also turns them off)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand snapshot" -l max-input-size -d 'The most one input (--snapshot, -f) may hold once decompressed, e.g. 4Gi; the default is about 8 times the snapshot of a 5,000-node, 150,000-pod cluster' -r
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand snapshot" -l no-redact -d 'Keep env values, large annotations and managedFields'
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand snapshot" -l consistent-read -d 'Read with a consistent (quorum) list from etcd instead of the API server\'s watch cache'
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand snapshot" -s v -l verbose -d 'More detail on errors and warnings'
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand snapshot" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand snapshot" -s V -l version -d 'Print version'
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand completions" -l snapshot -d 'Read the cluster from a file, a directory of files, or - for stdin (YAML or JSON, .gz accepted) instead of the API server' -r
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand completions" -l kubeconfig -d 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)' -r -F
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand completions" -l context -d 'The kubeconfig context to use' -r
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand completions" -l cluster -d 'The kubeconfig cluster to use' -r
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand completions" -l user -d 'The kubeconfig user to use' -r
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand completions" -s n -l namespace -d 'Namespace (default: the context\'s namespace, else "default")' -r
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand completions" -l request-timeout -d 'How long to wait for each API request (e.g. 10s, 1m; 0 waits forever)' -r
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand completions" -s o -l output -d 'Output format' -r -f -a "table\t'A table readable at 80 columns'
wide\t'The table with a column per score plugin'
json\t''
yaml\t''"
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand completions" -l color -d 'When to use colours (NO_COLOR in the environment also turns them off)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand completions" -l max-input-size -d 'The most one input (--snapshot, -f) may hold once decompressed, e.g. 4Gi; the default is about 8 times the snapshot of a 5,000-node, 150,000-pod cluster' -r
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand completions" -l consistent-read -d 'Read with a consistent (quorum) list from etcd instead of the API server\'s watch cache'
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand completions" -s v -l verbose -d 'More detail on errors and warnings'
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand completions" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand completions" -s V -l version -d 'Print version'
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand help; and not __fish_seen_subcommand_from whatif explain lease snapshot completions help" -f -a "whatif" -d 'Where would this pod go, and what would it evict? (kubectl sched-whatif)'
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand help; and not __fish_seen_subcommand_from whatif explain lease snapshot completions help" -f -a "explain" -d 'Why is this pod pending, or why did it land where it did? (kubectl sched-explain)'
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand help; and not __fish_seen_subcommand_from whatif explain lease snapshot completions help" -f -a "lease" -d 'Who holds each leader-election lease, and is it fresh? (kubectl sched-lease)'
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand help; and not __fish_seen_subcommand_from whatif explain lease snapshot completions help" -f -a "snapshot" -d 'Save the cluster state this tool reads, for offline analysis'
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand help; and not __fish_seen_subcommand_from whatif explain lease snapshot completions help" -f -a "completions" -d 'Print shell completions'
complete -c kubectl-sched -n "__fish_kubectl_sched_using_subcommand help; and not __fish_seen_subcommand_from whatif explain lease snapshot completions help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
