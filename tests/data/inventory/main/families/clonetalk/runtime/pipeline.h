// Clonetalk pipeline: plain synthesis, or synthesis in a reference voice.
class Pipeline final : public IAudioGeneration, public IReferenceAudioGeneration {
  public:
    AudioResult generate_audio(const std::string& text) override;
    AudioResult generate_audio_with_reference(const std::string& text, const AudioReference& voice) override;
};
