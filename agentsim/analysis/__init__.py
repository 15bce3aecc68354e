"""What is computed after runs: bias tests, strategy tables, critical mass, comprehension, and
the report. Each is usable from Python and from `python -m agentsim NAME`:

    stats          bias_test, js_distance_from_uniform, proportion_interval
    bias           sample_first_choices, individual_bias, collective_bias, find_unbiased_pool
    strategies     strategy_table, state_frequencies, configuration_tests
    critical_mass  CriticalMassSearch, search, search_both
    comprehension  ComprehensionCheck, check
    recorded       find_experiments, RecordedExperiment (reading runs back)
    report         build_report, register_section (add a section for a new kind of scenario)
"""
