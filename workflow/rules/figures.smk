rule figure:
    """One figure as PDF and PNG from its cached data stages."""
    input:
        unpack(figure_inputs),
    output:
        pdf="figures/{fig}.pdf",
        png="figures/{fig}.png",
    params:
        axes=lambda w: EXP[w.fig].get("axes", {}),
        style=config["style"],
        version=code_version("figures"),
    log:
        "logs/figure/{fig}.log",
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    script:
        "../scripts/figure.py"
