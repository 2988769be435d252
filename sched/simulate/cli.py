"""``kubesalvo simulate``: place a synthetic (or snapshot) cluster's burst in-process.

With no options it generates the default scenario (5,000 nodes, a mixed burst of 20,000
pods), places the burst with the kernels and prints a summary. Bad input (a missing or
malformed file, a bad number) is reported on stderr with exit code 2, as argparse does for
bad arguments.
"""

from __future__ import annotations

import argparse
import json
import sys

from rich.console import Console

from kubesalvo.core.plugins.node_resources_fit import (
    NodeResourcesFitArgs,
    ScoringStrategy,
    ScoringStrategyType,
    ShapePoint,
)
from kubesalvo.core.profile import Profile, ProfileError
from kubesalvo.core.snapshot import DEVICE_KINDS, SnapshotError
from kubesalvo.core.synthetic import WORKLOAD_SHAPES, ScenarioError
from kubesalvo.core.volumes import KINDS as STORAGE_KINDS
from kubesalvo.sched.config import ConfigError, gates, load_config
from kubesalvo.sched.simulate.report import render, summary_json
from kubesalvo.sched.simulate.run import placed_snapshot, simulate
from kubesalvo.sched.simulate.source import ClusterChoice, SimulateError, build_cluster
from kubesalvo.sched.snapshot import files as snapshot_files

__all__ = ["configure", "main"]

EXIT_BAD_INPUT = 2
# RequestedToCapacityRatio needs a shape; without a configuration file, simulate uses the
# bin-packing line from empty (score 0) to full (score 10), kube-scheduler's documented
# example of the strategy.
BIN_PACKING_SHAPE = (ShapePoint(0, 0), ShapePoint(100, 10))


def _count(minimum: int):
    def parse(text: str) -> int:
        try:
            value = int(text.replace("_", ""))
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"expected an integer >= {minimum}, got {value}")
        return value

    parse.__name__ = "count"
    return parse


def configure(parser: argparse.ArgumentParser) -> None:
    source = parser.add_mutually_exclusive_group()
    source.add_argument(
        "--scenario", metavar="FILE", help="a YAML scenario (as in bench/workloads/)"
    )
    source.add_argument(
        "--workload",
        choices=sorted(WORKLOAD_SHAPES),
        help="a burst of one shape on 5,000 nodes (replicasets and distinct: the speed "
        "targets, 10,000 pods; stateful: 8,000 pods with a claim each on local PVs, two "
        "a node)",
    )
    source.add_argument(
        "--snapshot",
        metavar="FILE",
        help="a msgpack cluster snapshot: its bound pods are the running load, its pending "
        "pods the burst, its Services and controllers the selectors of default spreading",
    )
    parser.add_argument("--nodes", type=_count(1), help="nodes in the generated fleet")
    parser.add_argument("--pods", type=_count(0), help="pods in the generated burst")
    parser.add_argument("--classes", type=_count(1), help="classes of --workload replicasets")
    parser.add_argument(
        "--owners",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="--workload replicasets: its pods are owned by ReplicaSets, as a Deployment's "
        "are, so kube-scheduler's default spreading applies to them (default: on)",
    )
    parser.add_argument(
        "--seed",
        type=_count(0),
        help="seed of the generated cluster and of the random choice among equally scored "
        "nodes (default: the scenario's; with --snapshot it seeds that choice only, 0 "
        "when not given)",
    )
    parser.add_argument(
        "--config", metavar="FILE", help="a KubeSchedulerConfiguration (its first profile is used)"
    )
    parser.add_argument(
        "--feature-gates",
        type=gates.flag_type,
        default=gates.FeatureGates(),
        metavar="NAME=BOOL,...",
        help=gates.FLAG_HELP,
    )
    parser.add_argument(
        "--strategy",
        choices=[t.value for t in ScoringStrategyType],
        help="NodeResourcesFit scoring strategy (default: the profile's, LeastAllocated)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    parser.add_argument(
        "--save-snapshot", metavar="FILE", help="save the simulated cluster (before placement)"
    )
    parser.add_argument(
        "--save-placed",
        metavar="FILE",
        help="save the cluster after placement (placed pods carry spec.nodeName)",
    )


def _omitted(omitted: list[str]) -> list[tuple[list[str], str]]:
    """The kinds a snapshot lacks, by what they change in the simulation."""
    effects = (
        (set(STORAGE_KINDS), "pods with volumes are placed without those objects"),
        (set(DEVICE_KINDS), "pods with device claims are placed without those objects"),
    )
    out: list[tuple[list[str], str]] = []
    rest = [kind for kind in omitted if not any(kind in kinds for kinds, _ in effects)]
    if rest:
        out.append((rest, "default topology spreading uses the other workloads' selectors only"))
    for kinds, consequence in effects:
        lacking = [kind for kind in omitted if kind in kinds]
        if lacking:
            out.append((lacking, consequence))
    return out


def _profile(args: argparse.Namespace) -> Profile:
    profile = Profile.default()
    if args.config or args.feature_gates != gates.FeatureGates():
        profile = load_config(args.config, args.feature_gates).profiles[0].core
    if args.strategy:
        strategy = profile.fit.scoring_strategy
        shape = strategy.shape
        if args.strategy == ScoringStrategyType.REQUESTED_TO_CAPACITY_RATIO and not shape:
            shape = BIN_PACKING_SHAPE
        elif args.strategy != ScoringStrategyType.REQUESTED_TO_CAPACITY_RATIO:
            shape = ()
        fit = profile.fit
        profile = Profile(
            scheduler_name=profile.scheduler_name,
            filters=profile.filters,
            scores=profile.scores,
            fit=NodeResourcesFitArgs(
                fit.ignored_resources,
                fit.ignored_resource_groups,
                ScoringStrategy(ScoringStrategyType(args.strategy), strategy.resources, shape),
            ),
            balanced_allocation=profile.balanced_allocation,
            spread=profile.spread,
            inter_pod_affinity=profile.inter_pod_affinity,
            node_affinity=profile.node_affinity,
            plugin_args=profile.plugin_args,
            packing=profile.packing,
        )
    return profile


def _save(path: str, snapshot) -> None:
    try:
        snapshot_files.save(path, snapshot)
    except OSError as error:
        raise SimulateError(f"{path}: cannot save snapshot: {error.strerror or error}") from error


def main(args: argparse.Namespace) -> int:
    try:
        profile = _profile(args)
        cluster = build_cluster(
            ClusterChoice(
                scenario_file=args.scenario,
                workload=args.workload,
                snapshot_file=args.snapshot,
                nodes=args.nodes,
                pods=args.pods,
                classes=args.classes,
                seed=args.seed,
                owners=args.owners,
            )
        )
        for kinds, consequence in _omitted(cluster.snapshot.omitted):
            print(
                f"kubesalvo simulate: warning: the snapshot lacks {', '.join(kinds)} (not "
                f"allowed to list them, or not served, when it was recorded): {consequence}",
                file=sys.stderr,
            )
        if args.save_snapshot:
            _save(args.save_snapshot, cluster.snapshot)
        summary = simulate(
            cluster.snapshot,
            profile,
            source=cluster.source,
            generate_seconds=cluster.generate_seconds,
            seed=cluster.seed,
        )
        if args.save_placed:
            _save(args.save_placed, placed_snapshot(cluster.snapshot, summary))
    except (SimulateError, ScenarioError, SnapshotError, ConfigError, ProfileError) as error:
        # One line, whatever the error carries (a YAML error adds its position on lines
        # of their own).
        text = "; ".join(line.strip() for line in str(error).splitlines() if line.strip())
        print(f"kubesalvo simulate: error: {text}", file=sys.stderr)
        return EXIT_BAD_INPUT
    if args.json:
        print(json.dumps(summary_json(summary)))
    else:
        render(summary, Console())
    return 0
