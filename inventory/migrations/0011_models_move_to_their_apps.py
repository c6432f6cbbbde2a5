"""Bookings, API tokens and budgets leave the inventory for their own apps; their tables stay (db_table)."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("fleet", "0010_gpu_table_fillfactor"),
        ("accounts", "0001_initial"),
        ("reservations", "0001_initial"),
        ("monitoring", "0019_userbudget_from_inventory"),
        ("training", "0008_run_reservation_in_its_own_app"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
            migrations.RemoveField(
                model_name='apitoken',
                name='user',
            ),
            migrations.RemoveField(
                model_name='calendarfeed',
                name='user',
            ),
            migrations.DeleteModel(
                name='DeadlineWindow',
            ),
            migrations.DeleteModel(
                name='QuotaPolicy',
            ),
            migrations.RemoveField(
                model_name='reservation',
                name='changed_by',
            ),
            migrations.RemoveField(
                model_name='reservation',
                name='gpu',
            ),
            migrations.RemoveField(
                model_name='reservation',
                name='project',
            ),
            migrations.RemoveField(
                model_name='reservation',
                name='user',
            ),
            migrations.RemoveField(
                model_name='reservationevent',
                name='reservation',
            ),
            migrations.RemoveField(
                model_name='reservationevent',
                name='actor',
            ),
            migrations.RemoveField(
                model_name='reservationevent',
                name='user',
            ),
            migrations.RemoveField(
                model_name='userbudget',
                name='user',
            ),
            migrations.DeleteModel(
                name='ApiToken',
            ),
            migrations.DeleteModel(
                name='CalendarFeed',
            ),
            migrations.DeleteModel(
                name='Reservation',
            ),
            migrations.DeleteModel(
                name='ReservationEvent',
            ),
            migrations.DeleteModel(
                name='UserBudget',
            ),
            ],
        ),
    ]
