// Lyra's native runtime for its older generations.
ITask* create(const FamilyContext& context) {
    auto engine = load(require_section(context.reader, "engine.plan"));
    return new LyraText(std::move(engine));
}
