"""Each run gets a UUID that names its directories; runs from before keep their run-<id> directories."""

import uuid

from django.db import migrations, models

BATCH = 1000


def give_each_run_a_uuid(apps, schema_editor):
    # Their files already sit under run-<id> (output, artifacts, checkpoints): the name is kept, so nothing is lost.
    Run = apps.get_model("training", "Run")
    runs = list(Run.objects.only("pk", "checkpoint_dir"))
    for run in runs:
        run.uuid = uuid.uuid4()
        run.files_dir_name = f"run-{run.pk}"
        run.checkpoint_dir = run.checkpoint_dir or run.files_dir_name
    Run.objects.bulk_update(runs, ["uuid", "files_dir_name", "checkpoint_dir"], batch_size=BATCH)


class Migration(migrations.Migration):
    dependencies = [
        ("training", "0010_worker_reports_its_environments"),
    ]

    operations = [
        migrations.AddField(
            model_name="run",
            name="uuid",
            field=models.UUIDField(null=True, editable=False),
        ),
        migrations.AddField(
            model_name="run",
            name="files_dir_name",
            field=models.CharField(
                blank=True,
                editable=False,
                help_text="run-<id> for a run from before its files were named after its UUID; blank: run-<uuid>.",
                max_length=100,
            ),
        ),
        migrations.RunPython(give_each_run_a_uuid, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="run",
            name="uuid",
            field=models.UUIDField(default=uuid.uuid4, editable=False, unique=True),
        ),
    ]
