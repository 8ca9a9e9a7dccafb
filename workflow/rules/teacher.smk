rule teacher:
    """Teacher W*, labels and token seed for one (channel, T, beta, rho, d, alpha, seed)."""
    output:
        TEACHER_PATH,
    params:
        base_seed=config["seed"],
        version=code_version("model", "channels", "io"),
    log:
        "logs/teacher/{channel}/T{T}_beta{beta}_rho{rho}_d{d}_alpha{alpha}_seed{seed}.log",
    threads: 1
    resources:
        mem_mb=2000,
        runtime=30,
    script:
        "../scripts/teacher.py"
