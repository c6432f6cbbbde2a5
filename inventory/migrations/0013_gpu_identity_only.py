"""The GPU row keeps identity only: its latest state now lives in telemetry's GPUState (monitoring 0020 copied it)."""

from django.db import migrations

FILL = "ALTER TABLE fleet_gpu SET (fillfactor = 50)"
UNFILL = "ALTER TABLE fleet_gpu RESET (fillfactor)"


class Migration(migrations.Migration):
    dependencies = [
        ("fleet", "0012_nvlink_state_leaves_the_inventory"),
        ("monitoring", "0020_gpu_latest_state"),
    ]

    operations = [
        migrations.RemoveField(
            model_name='gpu',
            name='clocks_event_reasons',
        ),
        migrations.RemoveField(
            model_name='gpu',
            name='ecc_volatile',
        ),
        migrations.RemoveField(
            model_name='gpu',
            name='energy_mj',
        ),
        migrations.RemoveField(
            model_name='gpu',
            name='fan_pct',
        ),
        migrations.RemoveField(
            model_name='gpu',
            name='last_sample_at',
        ),
        migrations.RemoveField(
            model_name='gpu',
            name='mem_clock_mhz',
        ),
        migrations.RemoveField(
            model_name='gpu',
            name='mem_reserved_mib',
        ),
        migrations.RemoveField(
            model_name='gpu',
            name='mem_temp_c',
        ),
        migrations.RemoveField(
            model_name='gpu',
            name='mem_used_mib',
        ),
        migrations.RemoveField(
            model_name='gpu',
            name='nvlink_rx_kib_s',
        ),
        migrations.RemoveField(
            model_name='gpu',
            name='nvlink_tx_kib_s',
        ),
        migrations.RemoveField(
            model_name='gpu',
            name='pcie_replays',
        ),
        migrations.RemoveField(
            model_name='gpu',
            name='pcie_rx_kib_s',
        ),
        migrations.RemoveField(
            model_name='gpu',
            name='pcie_tx_kib_s',
        ),
        migrations.RemoveField(
            model_name='gpu',
            name='power_w',
        ),
        migrations.RemoveField(
            model_name='gpu',
            name='processes',
        ),
        migrations.RemoveField(
            model_name='gpu',
            name='remap_failure',
        ),
        migrations.RemoveField(
            model_name='gpu',
            name='remap_pending',
        ),
        migrations.RemoveField(
            model_name='gpu',
            name='remapped_correctable',
        ),
        migrations.RemoveField(
            model_name='gpu',
            name='remapped_uncorrectable',
        ),
        migrations.RemoveField(
            model_name='gpu',
            name='retired_dbe',
        ),
        migrations.RemoveField(
            model_name='gpu',
            name='retired_pending',
        ),
        migrations.RemoveField(
            model_name='gpu',
            name='retired_sbe',
        ),
        migrations.RemoveField(
            model_name='gpu',
            name='sm_clock_mhz',
        ),
        migrations.RemoveField(
            model_name='gpu',
            name='temp_c',
        ),
        migrations.RemoveField(
            model_name='gpu',
            name='util_dec',
        ),
        migrations.RemoveField(
            model_name='gpu',
            name='util_enc',
        ),
        migrations.RemoveField(
            model_name='gpu',
            name='util_gpu',
        ),
        migrations.RemoveField(
            model_name='gpu',
            name='util_mem',
        ),
        migrations.RemoveField(
            model_name='gpu',
            name='xid_count',
        ),
        migrations.RemoveField(
            model_name='gpu',
            name='xid_last',
        ),
        # Nothing rewrites the GPU row on every flush any more.
        migrations.RunSQL(UNFILL, reverse_sql=FILL),
    ]
