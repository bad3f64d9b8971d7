"""``plansuite-report``: tables, figures and a self-contained HTML page from results folders."""
