"""Keep half of each page of fleet_gpu free: every flush rewrites each reporting GPU's row (its latest state), and
PostgreSQL can update a row in place (heap-only, no index entries) only when the new version fits on the old one's
page. Packed full, rows moved to another page on most flushes: the table bloated and the latest-state update cost
more (docs/benchmarks.md, "The GPU table's free room"). Pages filled before this fill out as their
rows move; `VACUUM FULL fleet_gpu` repacks them at once."""

from django.db import migrations

FILL = "ALTER TABLE fleet_gpu SET (fillfactor = 50)"
UNFILL = "ALTER TABLE fleet_gpu RESET (fillfactor)"


class Migration(migrations.Migration):
    dependencies = [("fleet", "0009_nvlink_state_own_row")]

    operations = [migrations.RunSQL(FILL, reverse_sql=UNFILL)]
