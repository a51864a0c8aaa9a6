#!/bin/sh
# Installs the Debian packages the build and tests need, when missing.
# Runs apt-get as root (or through sudo); prints nothing when all is there.
set -e
need="cmake make gcc g++ clang pkg-config libsodium-dev libjansson-dev libxxhash-dev libcmocka-dev python3 python3-numpy python3-pytest python3-sklearn python3-xgboost"
# libcurl (HTTP and AWS SigV4) and expat (S3 listings) for snapshots on an
# object store (src/snapshot/store_s3.c)
need="$need curl libcurl4-openssl-dev libexpat1-dev"
# OpenMPI for librally_mpi (src/mpi) and its tests under mpirun
need="$need openmpi-bin libopenmpi-dev"
# ssh and sshd: rally-run --launcher ssh's tests start an sshd of their own,
# one per network namespace in the multi-host test and bench
need="$need openssh-client openssh-server"
# a one-node Slurm with munge for tests/jobs/slurm_test.sh (its rig starts them itself)
need="$need slurm-wlm munge"
# OpenStack Swift with s3api and tempauth for tests/rigs/swift_rig.sh (it runs the servers itself)
need="$need python3-swift"
# pip install ./bindings/python into a venv, offline (tests/jobs/python_pip_test.sh),
# and the Dask and PyTorch integrations (rally.dask, rally.torch) and their tests
need="$need python3-venv python3-pip python3-wheel python3-setuptools python3-distributed python3-pandas python3-torch"
# rally-run --status as a monitoring system and a person see it: Prometheus
# scrapes /metrics, headless Chromium (driven by Selenium through chromedriver)
# loads the page, jsonschema validates status.json and the event lines
# (tests/jobs/status_test.py); none of them is started as a system service
need="$need prometheus chromium chromium-driver python3-selenium python3-jsonschema"
# valgrind: callgrind counts the instructions of the public small allreduce
# (tests/jobs/small_cost_test.sh), the same whatever the machine's load
need="$need valgrind"
# clang's runtimes (ASan, UBSan, TSan, libFuzzer) for `make sanitize` and the
# fuzz tests: only "recommended" by clang, so named here, for clang's version
if command -v clang >/dev/null 2>&1; then
    need="$need libclang-rt-$(clang -dumpversion | cut -d. -f1)-dev"
fi
# Java for Spark (rally.spark's tests run pyspark's local-cluster), when none is there
command -v java >/dev/null 2>&1 || need="$need default-jre-headless"
[ -n "$RALLY_DEPS_EXTRA" ] && need="$need $RALLY_DEPS_EXTRA"
missing=""
for p in $need; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
    echo "deps: installing$missing"
    SUDO=""
    [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing >/dev/null
fi

# A current PyTorch beside Debian's (1.13), for rally.torch's tests on both
# (tests/python.cmake, python_torch2): Debian has no torch 2, so it comes from
# PyPI, pinned, into a venv of the checkout (.venv) made from Debian's python3
# with its site packages (numpy, pytest).  Only here: no test fetches anything.
TORCH2=2.15.0
venv=$(dirname "$0")/../.venv
if ! ls -d "$venv"/lib/python3*/site-packages/torch-$TORCH2.dist-info >/dev/null 2>&1; then
    echo "deps: torch $TORCH2 into .venv (PyPI)"
    /usr/bin/python3 -m venv --system-site-packages "$venv"
    "$venv/bin/pip" install -q --disable-pip-version-check "torch==$TORCH2"
fi

# The engines rally runs under (rally.spark, rally.ray) and the peers measured
# beside them (xgboost.spark): Debian has no pyspark or ray and an old xgboost,
# so they come from PyPI, pinned, into the same .venv, with the pandas and
# pyarrow that pyspark's pandas UDFs (xgboost.spark) need.  Java is Debian's.
PYPI_PINS="pyspark==4.1.1 ray==2.60.0 xgboost-cpu==3.2.0 pandas==2.2.3 pyarrow==19.0.1"
# Ray Train (bench/ray.sh runs it beside rally.ray) wants pydantic.
PYPI_PINS="$PYPI_PINS pydantic==2.14.4"
# torchft (bench/torch.sh runs its fault-tolerant DDP beside rally.torch: CPU, Gloo).
PYPI_PINS="$PYPI_PINS torchft==0.2.0"
for pin in $PYPI_PINS; do
    name=$(echo "${pin%%==*}" | tr - _)
    if ! ls -d "$venv"/lib/python3*/site-packages/$name-${pin##*==}.dist-info >/dev/null 2>&1; then
        echo "deps: $PYPI_PINS into .venv (PyPI)"
        "$venv/bin/pip" install -q --disable-pip-version-check $PYPI_PINS
        break
    fi
done
