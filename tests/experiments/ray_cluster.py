"""A two-node Ray cluster on this machine for the tests: ``ray start --head`` and a second
``ray start --address`` on 127.0.0.1, each with one CPU, in its own temp folder and process
session, so the tests stop exactly the processes they started (never ``ray stop``, which
would stop every Ray instance of the machine's user, another run's included)."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

RAY = str(Path(sys.executable).with_name("ray"))


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class LocalRayCluster:
    """Nodes started by ``ray start --block`` (the command stays up as the parent of the node's
    processes); ``stop_node`` and ``close`` end each node's whole process tree by pid."""

    def __init__(self) -> None:
        self.temp_dir = tempfile.mkdtemp(prefix="rayt", dir="/tmp")  # short: Ray's socket paths must fit 107 bytes
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.nodes: list[subprocess.Popen] = []
        self.sessions: set[int] = set()
        # Ray's token authentication, as a local `ray.init()` sets it up: the token in ~/.ray
        # (made if missing), the mode set for the nodes and for this process, the driver.
        subprocess.run([RAY, "get-auth-token", "--generate"], check=True, capture_output=True)
        self.saved_auth_mode = os.environ.get("RAY_AUTH_MODE")
        _set_auth_mode("token")
        self.env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "OMP_NUM_THREADS": "1"}

    def start_node(self, head: bool) -> subprocess.Popen:
        command = [RAY, "start", "--block", "--num-cpus", "1", "--node-ip-address", "127.0.0.1", "--disable-usage-stats",
                   "--dashboard-agent-listen-port", str(free_port()), "--metrics-export-port", str(free_port())]
        if head:
            command += ["--head", "--port", str(self.port), "--temp-dir", self.temp_dir, "--include-dashboard", "false"]
        else:
            command += ["--address", self.address]
        log = open(Path(self.temp_dir) / f"node{len(self.nodes)}.log", "w")
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=self.env, start_new_session=True)
        self.nodes.append(process)
        self.sessions.add(process.pid)
        return process

    def wait_for_nodes(self, count: int, timeout: float = 90.0) -> list[str]:
        """The ids of the alive nodes once there are ``count`` (the driver is connected)."""
        import ray

        deadline = time.time() + timeout
        while time.time() < deadline:
            for process in self.nodes:
                if process.poll() is not None and process.returncode != -signal.SIGTERM:
                    raise RuntimeError(f"`ray start` exited with {process.returncode}: {self.logs()}")
            if ray.is_initialized():
                alive = [node["NodeID"] for node in ray.nodes() if node["Alive"]]
                if len(alive) == count:
                    return alive
            elif _listening(self.port):
                try:
                    ray.init(address=self.address, include_dashboard=None, log_to_driver=False)
                except Exception:  # noqa: BLE001 - the head is still starting
                    pass
            time.sleep(0.5)
        raise TimeoutError(f"{count} Ray nodes not up after {timeout:.0f} s: {self.logs()}")

    def logs(self) -> str:
        return "\n".join(path.read_text()[-2000:] for path in sorted(Path(self.temp_dir).glob("node*.log")))

    def stop_node(self, process: subprocess.Popen, grace: float = 10.0) -> None:
        """SIGTERM to the node's `ray start` and every process under it (Ray's own graceful
        stop, as `ray stop` does it), SIGKILL to what is left after ``grace`` seconds."""
        try:
            tree = [psutil.Process(process.pid)] + psutil.Process(process.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            tree = []
        _end(tree, grace)
        process.wait(timeout=grace)

    def close(self) -> None:
        """Disconnect, stop every node, then end any process still in the nodes' sessions or
        naming the cluster's temp folder (none should be), by pid; remove the folder."""
        import ray

        if ray.is_initialized():
            ray.shutdown()
        for process in self.nodes:
            if process.poll() is None:
                self.stop_node(process)
        _end(self.leftovers(), grace=5.0)
        shutil.rmtree(self.temp_dir, ignore_errors=True)
        _set_auth_mode(self.saved_auth_mode)

    def leftovers(self) -> list[psutil.Process]:
        """Processes of this cluster still alive: in a node's session, or with the temp folder
        on their command line."""
        found = []
        for process in psutil.process_iter(["pid", "cmdline"]):
            try:
                mine = os.getsid(process.pid) in self.sessions or self.temp_dir in " ".join(process.info["cmdline"] or [])
            except (ProcessLookupError, PermissionError, psutil.Error):
                continue
            if mine and process.pid != os.getpid():
                found.append(process)
        return found


def _set_auth_mode(mode: str | None) -> None:
    """``RAY_AUTH_MODE`` for this process, re-read by Ray's core (which reads it once)."""
    if mode is None:
        os.environ.pop("RAY_AUTH_MODE", None)
    else:
        os.environ["RAY_AUTH_MODE"] = mode
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    from ray._raylet import Config

    Config.initialize("")


def _listening(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def _end(processes: list[psutil.Process], grace: float) -> None:
    for process in processes:
        try:
            process.terminate()
        except psutil.NoSuchProcess:
            pass
    _, alive = psutil.wait_procs(processes, timeout=grace)
    for process in alive:
        try:
            process.kill()
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(alive, timeout=grace)
