"""The experiment grid: its methods (``methods``), the cells and their cache (``grid``), and
the tables, curves and report built from the finished cells (``report``)."""
