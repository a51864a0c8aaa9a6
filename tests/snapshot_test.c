/*
 * snapshot_test.c — unit tests of durable snapshots (placeholder while the
 * layer is built).
 */
int main(void)
{
    return 0;
}
