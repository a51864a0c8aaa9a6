/*
 * act.c — rally-run's hands (run/run.h): what the launch policy decided,
 * carried out (said, the tracker told, signals forwarded, a rank started
 * again), and the view of the tracker the policy decides from.
 */
#include <stdio.h>

#include "run/run.h"
#include "tracker/proto.h"
#include "util/clock.h"

/* Starts rank i again (its old pipes read to the end first). */
void run_respawn(struct run *r, int i)
{
    rally__launch_flush(&r->procs[i]);
    int err = run_spawn(r, i);
    if (err != 0) {
        struct rally__launch_act b;
        rally__launch_policy_spawn_failed(r->pol, i, err, rally__now_ms(), &b);
        run_carry_out(r, &b);
    }
}

void run_carry_out(struct run *r, const struct rally__launch_act *a)
{
    if (a->say[0])
        rally__launch_out_say(&r->out[1], "%s", a->say);
    if (a->abort[0])
        rally__tracker_abort(r->t, RALLY_EPEER, "%s", a->abort);
    if (a->forward)
        run_signal_all(r, a->forward);
    if (a->gone >= 0)
        rally__tracker_rank_gone(r->t, run_rank_now(r, a->gone), a->cause);
    if (a->restart >= 0) {
        int i = a->restart;
        /* its events land before the new process */
        rally__tracker_rank_died(r->t, run_rank_now(r, i), a->cause);
        if (a->last) /* stuck again, it fails the job rather than die */
            rally__tracker_no_restart(r->t, run_rank_now(r, i));
        run_respawn(r, i);
    }
}

void run_view(const struct run *r, struct rally__launch_view *v)
{
    v->failed_rank = -1;
    v->sentence = "";
    v->state = rally__tracker_state(r->t, &v->sentence, &v->failed_rank);
    v->reported = rally__tracker_reported(r->t, &v->reported_rank);
    if (v->failed_rank >= 0)
        v->failed_rank = run_launched_as(rally__tracker_task_of(r->t, v->failed_rank));
    v->code = rally__tracker_code(r->t);
    v->recoverable = rally__tracker_recoverable(r->t);
}
