rule finite_size:
    """Gaps to SE against d at the configured alphas: power-law fit and d -> infinity limit."""
    input:
        unpack(finite_size_inputs),
    output:
        update(FINITE_SIZE_PATH),
    log:
        "logs/finite_size/{experiment}_{method}.log",
    conda:
        "../../environment.yml"
    threads: 1
    resources:
        mem_mb=request("light", "mem_mb"),
        runtime=request("light", "runtime"),
    params:
        gap=lambda w: PLAN.gap(w.experiment, w.method),
        version=script_version("finite_size"),
    script:
        "../scripts/finite_size.py"


rule recovery:
    """GD's and AGD's perfect-recovery thresholds per group, seed and step budget."""
    input:
        recovery_inputs,
    output:
        update(RECOVERY_PATH.replace("{kind}", "{kind,gd|agd}")),
    log:
        "logs/recovery/{experiment}_{kind}.log",
    conda:
        "../../environment.yml"
    threads: 1
    resources:
        mem_mb=request("light", "mem_mb"),
        runtime=request("light", "runtime"),
    params:
        groups=recovery_groups,
        options=lambda w: PLAN.recovery(w.experiment),
        version=script_version("recovery"),
    script:
        "../scripts/recovery.py"


rule figure:
    """One figure as PDF and PNG from its cached data stages."""
    input:
        unpack(figure_inputs),
    output:
        pdf=update("figures/{fig}.pdf"),
        png=update(report("figures/{fig}.png", caption="../report/figure.rst", category="{fig}")),
    log:
        "logs/figure/{fig}.log",
    priority: 40
    conda:
        "../../environment.yml"
    threads: 1
    resources:
        mem_mb=request("light", "mem_mb"),
        runtime=request("light", "runtime"),
    params:
        caption=lambda w: figure_caption(w.fig, PLAN.exp(w.fig)),
        axes=lambda w: PLAN.axes(w.fig),
        style=PLAN.style,
        version=script_version("figure"),
    script:
        "../scripts/figure.py"


rule config_record:
    """The resolved configuration (defaults filled in) next to the figures, for the report."""
    output:
        update(
            report("figures/config.yaml", caption="../report/config.rst", category="configuration")
        ),
    log:
        "logs/config_record.log",
    conda:
        "../../environment.yml"
    threads: 1
    resources:
        mem_mb=request("light", "mem_mb"),
        runtime=request("light", "runtime"),
    params:
        config=lambda w: resolved_config(config),
        version=script_version("config_record"),
    script:
        "../scripts/config_record.py"
