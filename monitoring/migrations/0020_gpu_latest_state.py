"""Each GPU's latest state leaves the inventory's row for telemetry's own (GPUState), values and all.

The per-link NVLink row comes along (its table renamed), so the inventory keeps identity only. The metric
columns are named here as they were at this migration, not read from the agent's metric list.
"""

import django.db.models.deletion
from django.db import migrations, models

METRICS = ['util_gpu', 'util_mem', 'mem_used_mib', 'temp_c', 'power_w', 'sm_clock_mhz', 'mem_clock_mhz', 'fan_pct', 'pcie_tx_kib_s', 'pcie_rx_kib_s', 'ecc_volatile', 'clocks_event_reasons', 'mem_temp_c', 'util_enc', 'util_dec', 'mem_reserved_mib', 'nvlink_tx_kib_s', 'nvlink_rx_kib_s', 'energy_mj', 'pcie_replays', 'xid_count', 'xid_last', 'retired_sbe', 'retired_dbe', 'retired_pending', 'remapped_correctable', 'remapped_uncorrectable', 'remap_pending', 'remap_failure']
COLUMNS = ", ".join(["last_sample_at", "processes", *METRICS])
COPY = f"INSERT INTO monitoring_gpustate (gpu_id, {COLUMNS}) SELECT id, {COLUMNS} FROM fleet_gpu"
COPY_BACK = (
    "UPDATE fleet_gpu AS g SET "
    + ", ".join(f"{column} = s.{column}" for column in ["last_sample_at", "processes", *METRICS])
    + " FROM monitoring_gpustate AS s WHERE s.gpu_id = g.id"
)
# Every flush rewrites each reporting GPU's state row: half of each page kept free lets PostgreSQL update it in
# place (heap-only, no new index entries), as fleet_gpu's fillfactor did before.
FILL = "ALTER TABLE monitoring_gpustate SET (fillfactor = 50)"


def move_content_types(apps, schema_editor, old="fleet", new="monitoring"):
    ContentType = apps.get_model("contenttypes", "ContentType")
    ContentType.objects.filter(app_label=old, model="nvlinkstate").update(app_label=new)


def move_content_types_back(apps, schema_editor):
    move_content_types(apps, schema_editor, old="monitoring", new="fleet")


class Migration(migrations.Migration):
    dependencies = [
        ("fleet", "0012_nvlink_state_leaves_the_inventory"),
        ("monitoring", "0019_userbudget_from_inventory"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [
        migrations.CreateModel(
            name='GPUState',
            fields=[
                ('gpu', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, primary_key=True, related_name='state', serialize=False, to='fleet.gpu')),
                ('last_sample_at', models.DateTimeField(blank=True, null=True)),
                ('util_gpu', models.FloatField(blank=True, null=True)),
                ('util_mem', models.FloatField(blank=True, null=True)),
                ('mem_used_mib', models.FloatField(blank=True, null=True)),
                ('temp_c', models.FloatField(blank=True, null=True)),
                ('power_w', models.FloatField(blank=True, null=True)),
                ('sm_clock_mhz', models.FloatField(blank=True, null=True)),
                ('mem_clock_mhz', models.FloatField(blank=True, null=True)),
                ('fan_pct', models.FloatField(blank=True, null=True)),
                ('pcie_tx_kib_s', models.FloatField(blank=True, null=True)),
                ('pcie_rx_kib_s', models.FloatField(blank=True, null=True)),
                ('ecc_volatile', models.BigIntegerField(blank=True, null=True)),
                ('clocks_event_reasons', models.BigIntegerField(blank=True, null=True)),
                ('mem_temp_c', models.FloatField(blank=True, null=True)),
                ('util_enc', models.FloatField(blank=True, null=True)),
                ('util_dec', models.FloatField(blank=True, null=True)),
                ('mem_reserved_mib', models.FloatField(blank=True, null=True)),
                ('nvlink_tx_kib_s', models.FloatField(blank=True, null=True)),
                ('nvlink_rx_kib_s', models.FloatField(blank=True, null=True)),
                ('energy_mj', models.BigIntegerField(blank=True, null=True)),
                ('pcie_replays', models.BigIntegerField(blank=True, null=True)),
                ('xid_count', models.BigIntegerField(blank=True, null=True)),
                ('xid_last', models.BigIntegerField(blank=True, null=True)),
                ('retired_sbe', models.BigIntegerField(blank=True, null=True)),
                ('retired_dbe', models.BigIntegerField(blank=True, null=True)),
                ('retired_pending', models.BigIntegerField(blank=True, null=True)),
                ('remapped_correctable', models.BigIntegerField(blank=True, null=True)),
                ('remapped_uncorrectable', models.BigIntegerField(blank=True, null=True)),
                ('remap_pending', models.BigIntegerField(blank=True, null=True)),
                ('remap_failure', models.BigIntegerField(blank=True, null=True)),
                ('processes', models.JSONField(blank=True, default=list, help_text='Processes seen in the latest sample.')),
            ],
            options={
                'verbose_name': 'GPU state',
            },
        ),
        migrations.RunSQL(FILL, reverse_sql=migrations.RunSQL.noop),
        migrations.RunSQL(COPY, reverse_sql=COPY_BACK),
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name='NvLinkState',
                    fields=[
                        ('gpu', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, primary_key=True, related_name='nvlink_state', serialize=False, to='fleet.gpu')),
                        ('ts', models.FloatField(help_text='UNIX time of the sample that brought the figures.')),
                        ('links', models.JSONField(blank=True, default=list, help_text='[{tx_kib_s, rx_kib_s}] by link number; empty without NVLink.')),
                    ],
                    options={
                        'verbose_name': 'NVLink state',
                    },
                ),
            ],
            database_operations=[
                migrations.RunSQL(
                    "ALTER TABLE fleet_nvlinkstate RENAME TO monitoring_nvlinkstate",
                    reverse_sql="ALTER TABLE monitoring_nvlinkstate RENAME TO fleet_nvlinkstate",
                ),
            ],
        ),
        migrations.RunPython(move_content_types, move_content_types_back),
    ]
