# The usage rollup reads one minute of process samples across all GPUs every minute. Without an index on
# ts alone that was a scan of the whole day's partition, so each run cost more as the day filled up; a
# BRIN on ts (as the GPU samples have) reads only the minute's block ranges. Made on the partitioned
# parent, so every partition has it, and partitions attached later get it too.

from django.db import migrations

CREATE = "CREATE INDEX processsample_ts_brin ON monitoring_processsample USING brin (ts) WITH (autosummarize = on)"
DROP = "DROP INDEX processsample_ts_brin"


class Migration(migrations.Migration):
    dependencies = [("monitoring", "0003_alerts_notifications_usage")]

    operations = [migrations.RunSQL(CREATE, reverse_sql=DROP)]
