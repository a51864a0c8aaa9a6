"""env.py -- what the build and the machine offer the matrix's jobs: paths,
rigs started once (an sshd, S3), data (tests/chaos/matrix.py).
"""
import os
import shutil
import socket
import subprocess
import tempfile
import time


class Env:
    """What the build and the machine offer; rigs started once, on demand."""

    def __init__(self, build, limit):
        self.build = os.path.abspath(build)
        self.limit = limit
        self.tmp = tempfile.mkdtemp(prefix="rally-chaos-")
        self.sshd = None  # (proc, options) or a reason string
        self.s3 = None  # environment dict or a reason string
        self.plain = {}

    def path(self, name):
        return os.path.join(self.build, name)

    def has(self, name):
        return os.access(self.path(name), os.X_OK)

    # -- the ssh "hosts" 127.0.0.2 and 127.0.0.3 (tests/jobs/launch_remote_test.sh)
    def ssh(self):
        if self.sshd is None:
            self.sshd = self._start_sshd()
        return self.sshd

    def _start_sshd(self):
        if not os.access("/usr/sbin/sshd", os.X_OK) or shutil.which("ssh-keygen") is None:
            return "no /usr/sbin/sshd or ssh-keygen here (scripts/deps.sh installs openssh-server)"
        d = os.path.join(self.tmp, "sshd")
        os.makedirs(d)
        os.chmod(self.tmp, 0o755)
        os.makedirs("/run/sshd", exist_ok=True)
        for k in ("host_key", "id"):
            subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", f"{d}/{k}"],
                           check=True)
        shutil.copy(f"{d}/id.pub", f"{d}/authorized_keys")
        s = socket.socket()
        s.bind(("127.0.0.2", 0))
        port = s.getsockname()[1]
        s.close()
        with open(f"{d}/sshd_config", "w") as f:
            f.write(f"Port {port}\nListenAddress 127.0.0.2\nListenAddress 127.0.0.3\n"
                    f"HostKey {d}/host_key\nAuthorizedKeysFile {d}/authorized_keys\n"
                    "PubkeyAuthentication yes\nPasswordAuthentication no\n"
                    "KbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\n"
                    f"PermitRootLogin yes\nPidFile {d}/sshd.pid\nMaxStartups 64:30:128\n"
                    "LogLevel ERROR\n")
        proc = subprocess.Popen(["/usr/sbin/sshd", "-D", "-e", "-f", f"{d}/sshd_config"],
                                stderr=open(f"{d}/sshd.log", "w"))
        opts = [f"Port={port}", f"IdentityFile={d}/id", "IdentitiesOnly=yes",
                "UserKnownHostsFile=/dev/null", "StrictHostKeyChecking=no", "LogLevel=ERROR"]
        for _ in range(100):
            if subprocess.run(["ssh", "-o", "BatchMode=yes"] + sum([["-o", o] for o in opts], [])
                              + ["127.0.0.3", "true"], capture_output=True).returncode == 0:
                return (proc, sum([["--ssh-option", o] for o in opts], []))
            if proc.poll() is not None:
                break
            time.sleep(0.1)
        proc.kill()
        proc.wait()
        return "sshd on 127.0.0.2/127.0.0.3 did not let us in"

    # -- an S3 bucket on the Swift rig (tests/rigs/swift_rig.sh)
    def bucket(self):
        if self.s3 is None:
            self.s3 = self._start_s3()
        return self.s3

    def _start_s3(self):
        here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        rig = os.path.join(self.tmp, "rig")
        r = subprocess.run(["sh", f"{here}/rigs/swift_rig.sh", "start", rig], capture_output=True,
                           text=True, timeout=300)
        if r.returncode != 0:
            last = (r.stdout + r.stderr).strip().splitlines()[-1:] or ["?"]
            return f"the Swift rig (tests/rigs/swift_rig.sh) did not start: {last[0]}"
        self.rig = rig
        env = {}
        out = subprocess.run(["sh", "-c", f". {rig}/env && env"], capture_output=True,
                             text=True).stdout
        for line in out.splitlines():
            k, _, v = line.partition("=")
            if k.startswith("AWS_") or k == "SWIFT_RIG_NETRC":
                env[k] = v
        code = subprocess.run(
            ["curl", "-sS", "-m", "30", "-o", "/dev/null", "-w", "%{http_code}", "--netrc-file",
             env["SWIFT_RIG_NETRC"], "--aws-sigv4", f"aws:amz:{env['AWS_DEFAULT_REGION']}:s3",
             "-H", "x-amz-content-sha256: UNSIGNED-PAYLOAD", "-X", "PUT",
             env["AWS_ENDPOINT_URL"] + "/tier"], capture_output=True, text=True).stdout
        if code != "200":
            return f"cannot make the bucket on the Swift rig: HTTP {code}"
        return env

    def close(self):
        if isinstance(self.sshd, tuple):
            self.sshd[0].kill()
            self.sshd[0].wait()
        if isinstance(self.s3, dict):
            here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
            subprocess.run(["sh", f"{here}/rigs/swift_rig.sh", "stop", self.rig], capture_output=True)
        shutil.rmtree(self.tmp, ignore_errors=True)

    def data(self, name, *gen):
        """A CSV file of rally-datagen's (its options gen), made once a matrix run."""
        p = os.path.join(self.tmp, name)
        if not os.path.exists(p):
            subprocess.run([self.path("rally-datagen"), *gen, "--format", "csv", "-o", p],
                           check=True, capture_output=True)
        return p

    def kmeans_data(self):
        return self.data("d.csv", "--rows", "20000", "--features", "8", "--centers", "6",
                         "--spread", "5", "--seed", "7")

    def sgd_data(self):
        """1000 samples: 16 batches of 64 an epoch."""
        return self.data("sgd.csv", "--rows", "1000", "--features", "6", "--centers", "2",
                         "--seed", "3")
