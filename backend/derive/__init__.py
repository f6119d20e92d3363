"""What is derived from a trace's rows at ingest, a module per step (pipeline.py declares the steps, their order and
what runs beside what). Each step writes tables defined in backend/schema/tables.py."""
