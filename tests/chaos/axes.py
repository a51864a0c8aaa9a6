"""axes.py -- the axes of the combination matrix, the ends a case can have, and
the sentences of a documented loss (tests/chaos/matrix.py).
"""


N = 4  # workers in every job; rally_host_group=2 makes two hosts of two


FEATURES = [
    ("transport", ["shm", "tcp"]),
    ("backend", ["robust", "mpi"]),
    ("local", ["none", "opaque", "records"]),
    ("snapshots", ["off", "dir", "tier2_dir", "tier2_s3"]),
    ("elastic", ["off", "min", "max"]),
    ("hier", ["off", "on"]),
    ("verify", ["off", "on"]),
    ("reproducible", ["off", "on"]),
    ("results", ["whole", "part"]),
    ("launcher", ["local", "ssh", "mpirun"]),
    # full passes over the shard (the models above), or minibatches through
    # the data cursor (rally-linear --solver sgd, docs/data.md): every sample
    # once an epoch, whatever failed or changed
    ("data", ["passes", "cursor"]),
]


FAILURES = ["mock_op", "mock_checkpoint", "mock_recovery", "mock_load", "mock_wire",
            "mock_final", "kill9", "adjacent2", "host", "sigterm", "grow", "rank0"]


AXES = FEATURES + [("failure", FAILURES)]


CLASSES = ["equal", "equal-objective", "refusal", "named-loss",  # the good ends
           "skip",
           "hang", "wrong-result", "unexpected-refusal", "not-injected", "internal-error"]


BAD = set(CLASSES[5:])


# The documented sentences of a loss (docs/recovery.md, "What --auto-resume
# mends" and "Limits, for now"; mpirun's own for librally_mpi, which does not
# recover).  A job that ends with one of these, and a non-zero status, lost
# what only a snapshot holds, or could not go on, and said so.
LOSSES = [
    r"cannot recover: the result of .* is lost",
    r"cannot recover: the local models of ranks [0-9, ]+ are lost",
    r"cannot go on with \d+ workers?: ",
    r"lost for good \(.*\): going on would leave \d+ workers?, fewer than",
    r"exited on signal 9",  # mpirun: a librally_mpi job ends with a death
]


# SIGTERM without --snapshot-dir stops the job: the workers get the signal
# and --grace-ms (docs/config.md, exit status 128+15); no snapshot to go on from.
STOPPED = r"rally-run: .*(signal 15|SIGTERM)"


# The losses a whole host of the robust engine never takes: its copies go to
# the other host's ranks (docs/recovery.md, "Failure domains").
COPY_LOSSES = [
    r"cannot recover: the result of .* is lost in part",
    r"cannot recover: the local models of ranks [0-9, ]+ are lost",
    r"the local-model records of old ranks? [0-9, ]+ (is|are) lost",
]


def arg(c, axis):
    return c[[a for a, _ in AXES].index(axis)]
